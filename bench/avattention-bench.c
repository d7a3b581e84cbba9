/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avattention-bench: speed of the core at the default sizes, one thread,
 * with OpenBLAS sgemm on the model's own matrix shapes as the yardstick
 * measured in the same run; frames per second on one thread and on one
 * thread per core, each with its own fusion workspace as avattention's
 * worker threads have; PyTorch's time for the same block
 * (bench/pytorch-fusion.py, run in the same run when torch is importable;
 * --no-pytorch skips it); and the cost of one video frame with an
 * avfusion-v2 model against v1 (the same model without its rhythm
 * stage), at the shipped sizes (docs/avfusion-v2.md §5): what
 * avpatchembed does per frame (the patch map, and v2's rhythm map) and
 * what avattention does (v2's history lookup and rhythm term, then the
 * layers), interleaved in the same run.  The v2 model is
 * models/sounding-objects-v2.safetensors when it is there (or the file
 * AVF_BENCH_V2_WEIGHTS names), else seeded weights of the shipped sizes.
 *
 *   avattention-bench [--json] [--seconds S] [--threads N] [--no-pytorch]
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blas.h"
#include "fusion.h"
#include "mel.h"
#include "patch_embed.h"
#include "prng.h"
#include "rhythm.h"
#include "weights.h"

#ifndef AVF_BENCH_PYTORCH_SCRIPT
#define AVF_BENCH_PYTORCH_SCRIPT "pytorch-fusion.py"
#endif
#ifndef AVF_BENCH_V2_MODEL
#define AVF_BENCH_V2_MODEL "sounding-objects-v2.safetensors"
#endif

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One GEMM of the model: C (m, n) = A (m, k) B^T or B, row-major. */
typedef struct
{
  int m, n, k, trans_b;
} Gemm;

/* The GEMMs of one attention module as core/mha.c calls them (the
 * projections packed as in torch's _in_projection_packed). */
static int
add_mha (Gemm * g, int i, int tq, int tk, int E, int H, int self)
{
  const int hd = E / H;
  if (self) {
    g[i++] = (Gemm) {
    tq, 3 * E, E, 1};           /* q, k and v in one */
  } else {
    g[i++] = (Gemm) {
    tq, E, E, 1};               /* q */
    g[i++] = (Gemm) {
    tk, 2 * E, E, 1};           /* k and v */
  }
  for (int h = 0; h < H; h++) {
    g[i++] = (Gemm) {
    tq, tk, hd, 1};             /* scores */
    g[i++] = (Gemm) {
    tq, hd, tk, 0};             /* context */
  }
  g[i++] = (Gemm) {
  tq, E, E, 1};                 /* out */
  return i;
}

/* The GEMMs of one forward at full audio; returns the count. */
static int
model_gemms (Gemm * g, const AvfConfig * c, int T)
{
  const int E = c->E, N = c->N, F = c->F, H = c->H;
  int i = 0;
  g[i++] = (Gemm) {
  T, E, c->M, 1};
  for (int l = 0; l < c->L; l++) {
    i = add_mha (g, i, T, T, E, H, 1);
    i = add_mha (g, i, N, N, E, H, 1);
    i = add_mha (g, i, T, N, E, H, 0);
    i = add_mha (g, i, N, T, E, H, 0);
    g[i++] = (Gemm) {
    T, F, E, 1};
    g[i++] = (Gemm) {
    T, E, F, 1};
    g[i++] = (Gemm) {
    N, F, E, 1};
    g[i++] = (Gemm) {
    N, E, F, 1};
  }
  return i;
}

/* 4. frames per second with one fusion workspace per thread */
typedef struct
{
  const AvfWeights *w;
  int T;
  const float *mel, *video;
  double seconds;
  double rate;                  /* frames per second, out */
} Worker;

static void *
worker_main (void *p)
{
  Worker *wk = p;
  AvfFusion *f;
  AvfError err;
  float *fused = malloc ((size_t) 2 * wk->w->cfg.E * sizeof (float));
  long n = 0;
  double t0, t1;

  if (fused == NULL || avf_fusion_new (&f, wk->w, wk->T, &err) != AVF_OK) {
    free (fused);
    return NULL;
  }
  avf_fusion_forward (f, fused, wk->mel, NULL, wk->video, AVF_ATTN_MEAN);
  t0 = now ();
  do {
    avf_fusion_forward (f, fused, wk->mel, NULL, wk->video, AVF_ATTN_MEAN);
    n++;
    t1 = now ();
  } while (t1 - t0 < wk->seconds);
  wk->rate = n / (t1 - t0);
  avf_fusion_free (f);
  free (fused);
  return NULL;
}

/* Frames per second of n threads fusing at once (the sum of their rates). */
static double
threaded_rate (const AvfWeights * w, int T, const float *mel,
    const float *video, int n, double seconds)
{
  pthread_t tid[64];
  Worker wk[64];
  double sum = 0;

  if (n > 64)
    n = 64;
  for (int i = 0; i < n; i++) {
    wk[i] = (Worker) {
    w, T, mel, video, seconds, 0};
    if (pthread_create (&tid[i], NULL, worker_main, &wk[i]) != 0)
      return 0;
  }
  for (int i = 0; i < n; i++) {
    pthread_join (tid[i], NULL);
    sum += wk[i].rate;
  }
  return sum;
}

/* 5. PyTorch's time for the same block, from bench/pytorch-fusion.py; < 0
 * when torch or Python is not there. */
static double
pytorch_ms (double seconds)
{
  const char *script = getenv ("AVF_BENCH_PYTORCH");
  const char *python = getenv ("AVF_PYTHON");
  char cmd[4096], line[512];
  double ms = -1;
  FILE *p;

  if (script == NULL)
    script = AVF_BENCH_PYTORCH_SCRIPT;
  if (python == NULL)
    python = "/usr/bin/python3";
  snprintf (cmd, sizeof cmd, "'%s' '%s' --seconds %.2f 2>/dev/null", python,
      script, seconds);
  p = popen (cmd, "r");
  if (p == NULL)
    return -1;
  while (fgets (line, sizeof line, p)) {
    const char *k = strstr (line, "\"pytorch_ms_per_frame\":");
    if (k)
      ms = atof (k + strlen ("\"pytorch_ms_per_frame\":"));
  }
  if (pclose (p) != 0)
    return -1;
  return ms > 0 ? ms : -1;
}

/* 6. one video frame of avfusion-v2 against v1, in milliseconds (each the
 * fastest of interleaved rounds) */
typedef struct
{
  char model[512];              /* the v2 file, or "seeded" */
  char sizes[160];
  double v1_patch, v2_patch;    /* avpatchembed */
  double v1_fusion, v2_fusion;  /* avattention, v2 with lookup and term */
  double v2_term;               /* of which the lookup and rhythm term */
} V2Cost;

/* The v2 model: the file when it loads as avfusion-v2, else seeded weights
 * of the shipped sizes (E 64, H 4, L 2, F 128, N 196, D 8, C 8, S 4, K 25,
 * G 4, lags -1 .. 3). */
static AvfWeights *
v2_model (char *name, size_t size)
{
  const char *path = getenv ("AVF_BENCH_V2_WEIGHTS");
  AvfWeights *w = NULL;
  AvfError err;

  if (path == NULL)
    path = AVF_BENCH_V2_MODEL;
  if (access (path, R_OK) == 0) {
    if (avf_weights_load (&w, path, &err) == AVF_OK
        && avf_rhythm_config_version (&w->rhythm) == 2) {
      snprintf (name, size, "%s", path);
      return w;
    }
    fprintf (stderr, "avattention-bench: %s: %s; seeded v2 weights "
        "instead\n", path, w ? "not an avfusion-v2 model" : err.message);
    avf_weights_free (w);
    w = NULL;
  }
  AvfConfig cfg = avf_config_default ();
  const AvfRhythmConfig r = { 8, 8, 4, 25, 4, 5, -1, 1, 0 };
  cfg.E = 64;
  cfg.H = 4;
  cfg.L = 2;
  cfg.F = 128;
  if (avf_weights_new_default_v2 (&w, &cfg, &r, 7, &err) != AVF_OK) {
    fprintf (stderr, "avattention-bench: %s\n", err.message);
    return NULL;
  }
  snprintf (name, size, "seeded");
  return w;
}

static int
v2_cost (V2Cost * out, double seconds)
{
  AvfWeights *w2 = v2_model (out->model, sizeof out->model);
  AvfPatchEmbed *pe = NULL;
  AvfRhythmEmbed *re = NULL;
  AvfRhythm *rh = NULL;
  AvfFusion *f = NULL;
  AvfError err;
  int ok = 0;

  if (w2 == NULL)
    return 0;
  const AvfConfig *c = &w2->cfg;
  const AvfRhythmConfig *r = &w2->rhythm;
  const int T = r->K * r->G, E = c->E, N = c->N, D = r->D;
  const int NC = avf_rhythm_n_centres (r);
  /* a square grid of N patches (196: 224 x 224 pixels) */
  int side = 1;
  while ((side + 1) * (side + 1) <= N)
    side++;
  const int width = side * c->P, height = (N / side) * c->P;
  /* a history of 25 fps frames back to before c_{lag_min} */
  const int n_hist = 40;
  const int64_t t = INT64_C (10000000000), window = (int64_t) T
      * (c->hop_length ? c->hop_length : 160) * INT64_C (1000000000)
      / (c->sample_rate ? c->sample_rate : 16000);
  const int hop = c->hop_length ? c->hop_length : 160;
  const int rate = c->sample_rate ? c->sample_rate : 16000;
  uint8_t *pixels = malloc ((size_t) width * height * 3);
  float *rows1 = malloc ((size_t) N * E * sizeof (float));
  /* v2 as the elements hold it: the [N, E] tensor, the [N, D] rows of
   * its GstAvRhythmMeta */
  float *rows2 = malloc ((size_t) N * E * sizeof (float));
  float *rhythm_rows = malloc ((size_t) N * D * sizeof (float));
  float *tokens = malloc ((size_t) N * E * sizeof (float));
  float *mel = malloc ((size_t) T * c->M * sizeof (float));
  float *hist_rows = malloc ((size_t) n_hist * N * D * sizeof (float));
  float *fused = malloc ((size_t) 2 * E * sizeof (float));
  int64_t starts[40], ends[40];
  int found[256];
  const float *hist[256];

  /* v1 is the same model without its rhythm stage: v1's code on the same
   * tensors and workspaces */
  if (avf_patch_embed_new (&pe, w2, width, height, &err) != AVF_OK
      || avf_rhythm_embed_new (&re, w2, &err) != AVF_OK
      || avf_rhythm_new (&rh, w2, T, &err) != AVF_OK
      || avf_fusion_new (&f, w2, T, &err) != AVF_OK) {
    fprintf (stderr, "avattention-bench: v2: %s\n", err.message);
    goto done;
  }
  if (!pixels || !rows1 || !rows2 || !rhythm_rows || !tokens || !mel || !hist_rows || !fused
      || NC > 256)
    goto done;
  for (size_t i = 0; i < (size_t) width * height * 3; i++)
    pixels[i] = (uint8_t) (avf_prng_u64 (8, i) >> 56);
  avf_prng_fill_symmetric (mel, (uint64_t) T * c->M, 9, 0, 4.0f);
  avf_prng_fill_symmetric (hist_rows, (uint64_t) n_hist * N * D, 10, 0,
      1.0f);
  for (int i = 0; i < n_hist; i++) {
    starts[i] = t - (n_hist - i) * INT64_C (40000000);
    ends[i] = starts[i] + INT64_C (40000000);
  }

  snprintf (out->sizes, sizeof out->sizes, "E %d H %d L %d F %d N %d, D %d "
      "C %d S %d K %d G %d, lags %d .. %d", E, c->H, c->L, c->F, N, D, r->C,
      c->P / r->Q, r->K, r->G, r->lag_min, r->lag_min + r->lags - 1);
  double best[5] = { 1e30, 1e30, 1e30, 1e30, 1e30 }, t0, t1;
  const double start = now ();
  int rounds = 0;
  do {
    /* v1: the patch map; the layers */
    t0 = now ();
    avf_patch_embed_forward (pe, rows1, pixels, (size_t) width * 3,
        avf_pixel_layout_rgb ());
    t1 = now ();
    if (t1 - t0 < best[0])
      best[0] = t1 - t0;
    t0 = now ();
    avf_fusion_forward (f, fused, mel, NULL, rows1, AVF_ATTN_MEAN);
    t1 = now ();
    if (t1 - t0 < best[1])
      best[1] = t1 - t0;
    /* v2: the patch map and the rhythm map; the history lookup, the
     * rhythm term and the layers */
    t0 = now ();
    avf_patch_embed_forward (pe, rows2, pixels, (size_t) width * 3,
        avf_pixel_layout_rgb ());
    avf_rhythm_embed_forward (re, rhythm_rows, (size_t) D,
        avf_patch_embed_patches (pe), width / c->P);
    t1 = now ();
    if (t1 - t0 < best[2])
      best[2] = t1 - t0;
    t0 = now ();
    avf_rhythm_bin_frames (found, NC, r->lag_min, r->G, starts, ends,
        (size_t) n_hist, t, window, hop, rate);
    for (int i = 0; i < NC; i++)
      hist[i] = found[i] < 0 ? NULL : hist_rows + (size_t) found[i] * N * D;
    avf_rhythm_tokens (rh, tokens, rows2, (size_t) E, mel, NULL, hist,
        NULL);
    const double t_term = now ();
    avf_fusion_forward (f, fused, mel, NULL, tokens, AVF_ATTN_MEAN);
    t1 = now ();
    if (t1 - t0 < best[3])
      best[3] = t1 - t0;
    if (t_term - t0 < best[4])
      best[4] = t_term - t0;
    rounds++;
  } while (t1 - start < seconds || rounds < 20);
  out->v1_patch = best[0] * 1e3;
  out->v1_fusion = best[1] * 1e3;
  out->v2_patch = best[2] * 1e3;
  out->v2_fusion = best[3] * 1e3;
  out->v2_term = best[4] * 1e3;
  ok = 1;

done:
  free (pixels);
  free (rows1);
  free (rows2);
  free (rhythm_rows);
  free (tokens);
  free (mel);
  free (hist_rows);
  free (fused);
  avf_fusion_free (f);
  avf_rhythm_free (rh);
  avf_rhythm_embed_free (re);
  avf_patch_embed_free (pe);
  avf_weights_free (w2);
  return ok;
}

static int
n_cores (void)
{
  long n = sysconf (_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int) n : 1;
}

int
main (int argc, char **argv)
{
  int json = 0, with_pytorch = 1, threads = n_cores ();
  double seconds = 2.0;
  for (int i = 1; i < argc; i++) {
    if (strcmp (argv[i], "--json") == 0)
      json = 1;
    else if (strcmp (argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof (argv[++i]);
    else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
      threads = atoi (argv[++i]);
    else if (strcmp (argv[i], "--no-pytorch") == 0)
      with_pytorch = 0;
    else {
      fprintf (stderr, "usage: %s [--json] [--seconds S] [--threads N] "
          "[--no-pytorch]\n", argv[0]);
      return 2;
    }
  }
  if (threads < 1)
    threads = 1;
  avf_blas_set_threads (1);

  AvfConfig cfg = avf_config_default ();
  const int T = 100;
  AvfWeights *w;
  AvfFusion *f;
  AvfError err;
  if (avf_weights_new_default (&w, &cfg, 0, &err) != AVF_OK
      || avf_fusion_new (&f, w, T, &err) != AVF_OK) {
    fprintf (stderr, "avattention-bench: %s\n", err.message);
    return 1;
  }

  /* the model's GEMM list and its flop count */
  static Gemm gemms[512];
  const int ng = model_gemms (gemms, &cfg, T);
  double flops = 0;
  int maxm = 0, maxn = 0, maxk = 0;
  for (int i = 0; i < ng; i++) {
    flops += 2.0 * gemms[i].m * gemms[i].n * gemms[i].k;
    if (gemms[i].m > maxm)
      maxm = gemms[i].m;
    if (gemms[i].n > maxn)
      maxn = gemms[i].n;
    if (gemms[i].k > maxk)
      maxk = gemms[i].k;
  }
  float *A = malloc ((size_t) maxm * maxk * sizeof (float));
  float *B = malloc ((size_t) maxn * maxk * sizeof (float));
  float *C = malloc ((size_t) maxm * maxn * sizeof (float));
  avf_prng_fill_symmetric (A, (uint64_t) maxm * maxk, 1, 0, 1.0f);
  avf_prng_fill_symmetric (B, (uint64_t) maxn * maxk, 2, 0, 1.0f);

  /* 1 and 2, interleaved: sgemm alone on the same shapes, and the whole
   * fusion forward (head-mean maps, the element's default).  Each round
   * times a few repetitions of each; the fastest round of each counts, so
   * a busy machine disturbs both alike and the ratio stays fair. */
  float *mel = malloc ((size_t) T * cfg.M * sizeof (float));
  float *video = malloc ((size_t) cfg.N * cfg.E * sizeof (float));
  float fused[2 * 256];
  avf_prng_fill_symmetric (mel, (uint64_t) T * cfg.M, 3, 0, 4.0f);
  avf_prng_fill_symmetric (video, (uint64_t) cfg.N * cfg.E, 4, 0, 1.0f);
  avf_fusion_forward (f, fused, mel, NULL, video, AVF_ATTN_MEAN);
  double best_gemm = 1e30, best_fusion = 1e30, t0, t1;
  const double start = now ();
  do {
    t0 = now ();
    for (int r = 0; r < 3; r++)
      for (int i = 0; i < ng; i++) {
        const Gemm *g = &gemms[i];
        cblas_sgemm (CblasRowMajor, CblasNoTrans,
            g->trans_b ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f,
            A, g->k, B, g->trans_b ? g->k : g->n, 0.0f, C, g->n);
      }
    t1 = now ();
    if ((t1 - t0) / 3 < best_gemm)
      best_gemm = (t1 - t0) / 3;
    t0 = now ();
    for (int r = 0; r < 3; r++)
      avf_fusion_forward (f, fused, mel, NULL, video, AVF_ATTN_MEAN);
    t1 = now ();
    if ((t1 - t0) / 3 < best_fusion)
      best_fusion = (t1 - t0) / 3;
  } while (t1 - start < seconds * 2 / 3);
  const double sgemm_gflops = flops / best_gemm * 1e-9;
  const double fusion_s = best_fusion;
  const double fusion_gflops = flops / fusion_s * 1e-9;

  /* 3. log-mel at 16 kHz, pushed in 10 ms buffers as a pipeline would */
  AvfMelConfig mc = avf_mel_config_default ();
  AvfMel *m;
  avf_mel_new (&m, &mc, NULL);
  const size_t n_audio = 16000 * 10;
  float *audio = malloc (n_audio * sizeof (float));
  float *frames = malloc ((n_audio / 160 + 1) * 64 * sizeof (float));
  avf_prng_fill_symmetric (audio, n_audio, 5, 0, 0.5f);
  double audio_s = 0;
  t0 = now ();
  t1 = t0;
  do {
    avf_mel_reset (m);
    size_t nf = 0;
    for (size_t pos = 0; pos < n_audio; pos += 160)
      nf += avf_mel_push (m, frames + nf * 64, n_audio / 160 + 1 - nf,
          audio + pos, 160, 1, NULL);
    audio_s += (double) n_audio / 16000.0;
    t1 = now ();
  } while (t1 - t0 < seconds / 3);
  const double mel_rtf = audio_s / (t1 - t0);

  /* 4 and 5: one thread against one per core, then PyTorch; the fusion's
   * own time is taken again after PyTorch and the faster one counts */
  const double fps_1 = threaded_rate (w, T, mel, video, 1, seconds / 3);
  const double fps_n = threads > 1 ?
      threaded_rate (w, T, mel, video, threads, seconds / 3) : fps_1;
  const double torch_ms = with_pytorch ? pytorch_ms (seconds / 2) : -1;
  double fusion_again = 1e30;
  if (torch_ms > 0) {
    for (int r = 0; r < 5; r++) {
      t0 = now ();
      avf_fusion_forward (f, fused, mel, NULL, video, AVF_ATTN_MEAN);
      t1 = now ();
      if (t1 - t0 < fusion_again)
        fusion_again = t1 - t0;
    }
  }
  const double fusion_best = fusion_again < fusion_s ? fusion_again :
      fusion_s;
  const char *core = avf_blas_kernel ();

  /* 6. avfusion-v2 against v1, one frame */
  V2Cost v2;
  memset (&v2, 0, sizeof v2);
  const int have_v2 = v2_cost (&v2, seconds / 3);
  const double v1_frame = v2.v1_patch + v2.v1_fusion;
  const double v2_frame = v2.v2_patch + v2.v2_fusion;

  if (json) {
    printf ("{\"sgemm_gflops\": %.2f, \"fusion_ms_per_frame\": %.3f, "
        "\"fusion_gflops\": %.2f, \"fusion_vs_sgemm\": %.3f, "
        "\"mel_realtime_factor\": %.0f, \"threads\": 1, "
        "\"model_mflop_per_frame\": %.1f, "
        "\"fusion_frames_per_s_1_thread\": %.1f, "
        "\"fusion_frames_per_s_all_threads\": %.1f, "
        "\"all_threads\": %d, \"threads_speedup\": %.3f, "
        "\"openblas_core\": \"%s\"", sgemm_gflops,
        fusion_s * 1e3, fusion_gflops, fusion_gflops / sgemm_gflops,
        mel_rtf, flops * 1e-6, fps_1, fps_n, threads, fps_n / fps_1,
        core ? core : "unknown");
    if (torch_ms > 0)
      printf (", \"pytorch_ms_per_frame\": %.3f, "
          "\"pytorch_vs_fusion\": %.3f", torch_ms,
          torch_ms / (fusion_best * 1e3));
    if (have_v2)
      printf (", \"v2_model\": \"%s\", \"v1_frame_ms\": %.4f, "
          "\"v2_frame_ms\": %.4f, \"v2_over_v1\": %.3f, "
          "\"v1_patch_ms\": %.4f, \"v2_patch_ms\": %.4f, "
          "\"v1_fusion_ms\": %.4f, \"v2_fusion_ms\": %.4f, "
          "\"v2_rhythm_term_ms\": %.4f", v2.model, v1_frame, v2_frame,
          v2_frame / v1_frame, v2.v1_patch, v2.v2_patch, v2.v1_fusion,
          v2.v2_fusion, v2.v2_term);
    printf ("}\n");
  } else {
    printf ("default sizes: E %d H %d L %d F %d M %d N %d T %d, one thread\n",
        cfg.E, cfg.H, cfg.L, cfg.F, cfg.M, cfg.N, T);
    printf ("model GEMMs:       %.1f MFLOP per video frame\n", flops * 1e-6);
    printf ("OpenBLAS sgemm:    %.2f GFLOP/s on those shapes\n",
        sgemm_gflops);
    printf ("fusion forward:    %.3f ms per frame, %.2f GFLOP/s (%.0f%% of "
        "sgemm)\n", fusion_s * 1e3, fusion_gflops,
        100.0 * fusion_gflops / sgemm_gflops);
    printf ("log-mel:           %.0fx real time at 16 kHz\n", mel_rtf);
    printf ("frames per second: %.1f on 1 thread, %.1f on %d threads "
        "(%.2fx)\n", fps_1, fps_n, threads, fps_n / fps_1);
    if (torch_ms > 0)
      printf ("PyTorch:           %.3f ms per frame for the same block "
          "(fusion is %.2fx faster)\n", torch_ms,
          torch_ms / (fusion_best * 1e3));
    else if (with_pytorch)
      printf ("PyTorch:           not measured (torch not importable)\n");
    printf ("OpenBLAS kernels:  %s\n", core ? core : "unknown");
    if (have_v2) {
      printf ("avfusion-v2 (%s: %s) against v1, one frame:\n", v2.model,
          v2.sizes);
      printf ("  avpatchembed:    v1 %.3f ms, v2 %.3f ms (+ rhythm map)\n",
          v2.v1_patch, v2.v2_patch);
      printf ("  avattention:     v1 %.3f ms, v2 %.3f ms (history lookup "
          "and rhythm term %.3f ms)\n", v2.v1_fusion, v2.v2_fusion,
          v2.v2_term);
      printf ("  per frame:       v1 %.3f ms, v2 %.3f ms: v2 costs %.2fx "
          "v1\n", v1_frame, v2_frame, v2_frame / v1_frame);
    }
  }
  free (A);
  free (B);
  free (C);
  free (mel);
  free (video);
  free (audio);
  free (frames);
  avf_mel_free (m);
  avf_fusion_free (f);
  avf_weights_free (w);
  return 0;
}
