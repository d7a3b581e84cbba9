/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The avfusion-v1 tensor set: the project PRNG, built-in weights equal to
 * model/avfusion.py's, a save/load round trip, and every way a weights
 * file can fail to be a model, each with its exact message.
 */
#include <stdlib.h>
#include <unistd.h>

#include "avf_test.h"
#include "prng.h"
#include "weights.h"
#include "safetensors_write.h"


static void
test_prng_known_values (void)
{
  /* the standard splitmix64 stream for seed 0 (model/avfusion.py agrees) */
  AVF_CHECK (avf_prng_u64 (0, 0) == UINT64_C (0xe220a8397b1dcdaf), "u64 0");
  AVF_CHECK (avf_prng_u64 (0, 1) == UINT64_C (0x6e789e6aa1b965f4), "u64 1");
  AVF_CHECK (avf_prng_u64 (0, 3) == UINT64_C (0xf88bb8a8724c81ec), "u64 3");
  AVF_CHECK (avf_prng_u64 (12345, 0) == UINT64_C (0x22118258a9d111a0),
      "seed 12345");
  float u = avf_prng_uniform (0, 0);
  AVF_CHECK (u == (float) (UINT64_C (0xe220a8397b1dcdaf) >> 40) * 0x1p-24f,
      "uniform %g", u);
}

static void
test_default_equals_pytorch_tool (void)
{
  AvfSafetensors *fx = avf_test_open_fixture ("fusion_default.safetensors");
  AvfConfig cfg = avf_config_default ();
  AvfWeights *w;
  AVF_CHECK (avf_weights_new_default (&w, &cfg, 0, NULL) == AVF_OK, "new");
  size_t n = avf_weights_count (&cfg);
  AVF_CHECK (n == 42, "%zu tensors", n);
  for (size_t i = 0; i < n && fx; i++) {
    AvfWeightTensor t;
    AVF_CHECK (avf_weights_tensor (w, i, &t), "tensor %zu", i);
    char name[96];
    snprintf (name, sizeof name, "wsum.%s", t.name);
    double *sum = avf_test_tensor (fx, name, AVF_DTYPE_F64, NULL);
    snprintf (name, sizeof name, "whead.%s", t.name);
    size_t nh;
    float *head = avf_test_tensor (fx, name, AVF_DTYPE_F32, &nh);
    if (sum && head) {
      double s = 0.0, mag = 0.0;
      for (uint64_t k = 0; k < t.numel; k++) {
        s += t.data[k];
        mag += fabs (t.data[k]);
      }
      AVF_CHECK (fabs (s - sum[0]) <= 1e-9 * (mag + 1), "%s: sum %.17g, "
          "tool %.17g", t.name, s, sum[0]);
      AVF_CHECK (memcmp (head, t.data, nh * sizeof (float)) == 0,
          "%s: first values differ", t.name);
    }
    free (sum);
    free (head);
  }
  avf_weights_free (w);
  avf_safetensors_free (fx);
}

static void
test_same_seed_same_bytes (void)
{
  AvfConfig cfg = avf_config_default ();
  cfg.L = 2;
  AvfWeights *a, *b, *c;
  avf_weights_new_default (&a, &cfg, 7, NULL);
  avf_weights_new_default (&b, &cfg, 7, NULL);
  avf_weights_new_default (&c, &cfg, 8, NULL);
  AvfWeightTensor ta, tb, tc;
  int differs = 0;
  for (size_t i = 0; avf_weights_tensor (a, i, &ta); i++) {
    avf_weights_tensor (b, i, &tb);
    avf_weights_tensor (c, i, &tc);
    AVF_CHECK (memcmp (ta.data, tb.data, ta.numel * 4) == 0, "%s", ta.name);
    differs |= memcmp (ta.data, tc.data, ta.numel * 4) != 0;
  }
  AVF_CHECK (differs, "another seed gives other weights");
  AVF_CHECK (a->layers[1].audio_norm[2].weight[5] == 1.0f
      && a->layers[1].video_norm[0].bias[0] == 0.0f, "LayerNorm 1 and 0");
  avf_weights_free (a);
  avf_weights_free (b);
  avf_weights_free (c);
}

static void
test_save_load_round_trip (void)
{
  AvfConfig cfg = { 48, 3, 2, 96, 40, 8, 12, 40, 16000, 400, 160, 370,
    0.0625f };
  AvfWeights *a, *b = NULL;
  AvfError err;
  AVF_CHECK (avf_weights_new_default (&a, &cfg, 5, &err) == AVF_OK, "%s",
      err.message);
  const char *p = avf_test_tmp_path ("rt.safetensors");
  AVF_CHECK (avf_weights_save (a, p, &err) == AVF_OK, "%s", err.message);
  AVF_CHECK (avf_weights_load (&b, p, &err) == AVF_OK, "%s", err.message);
  if (b) {
    AVF_CHECK (memcmp (&a->cfg, &b->cfg, sizeof cfg) == 0, "config");
    AvfWeightTensor ta, tb;
    for (size_t i = 0; avf_weights_tensor (a, i, &ta); i++) {
      avf_weights_tensor (b, i, &tb);
      AVF_CHECK (strcmp (ta.name, tb.name) == 0 && ta.numel == tb.numel
          && memcmp (ta.data, tb.data, ta.numel * 4) == 0, "%s", ta.name);
    }
  }
  avf_weights_free (a);
  avf_weights_free (b);
  unlink (p);
}

static void
test_pytorch_export_loads (void)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/weights_small.safetensors",
      avf_test_fixture_dir ());
  AvfWeights *w = NULL;
  AvfError err;
  AVF_CHECK (avf_weights_load (&w, path, &err) == AVF_OK, "%s", err.message);
  if (w) {
    const AvfConfig *c = &w->cfg;
    AVF_CHECK (c->E == 48 && c->H == 3 && c->L == 2 && c->F == 96
        && c->M == 40 && c->P == 8 && c->N == 12 && c->T_max == 40,
        "config E%d H%d L%d F%d M%d P%d N%d T%d", c->E, c->H, c->L, c->F,
        c->M, c->P, c->N, c->T_max);
    AVF_CHECK (c->sample_rate == 16000 && c->hop_length == 160
        && c->window_ms == 370, "metadata");
  }
  avf_weights_free (w);
}

/* ---- malformed tensor sets ------------------------------------------ */

/* Writes the small model's tensors with one change and loads the file. */
typedef struct
{
  const char *drop;             /* tensor to leave out */
  const char *reshape;          /* tensor whose first dimension is doubled */
  const char *as_f64;           /* tensor written as F64 */
  const char *nan_in;           /* tensor with a NaN */
  int extra;                    /* add an unexpected tensor */
  const char *heads;            /* num_heads metadata ("3" when NULL) */
  const char *format;           /* format metadata */
  const char *n_mels;           /* optional n_mels metadata */
  const char *threshold;        /* optional visible_threshold metadata */
  int provenance;               /* add world, description, trained_by, ... */
  AvfConfig *cfg_out;           /* the loaded config, on success */
} Mutation;

static AvfStatus
load_mutated (const Mutation * mu, AvfError * err)
{
  AvfConfig cfg = { 48, 3, 2, 96, 40, 8, 12, 40, 0, 0, 0, 0, 0.0f };
  AvfWeights *w, *back = NULL;
  avf_weights_new_default (&w, &cfg, 1, NULL);
  size_t n = avf_weights_count (&cfg);
  AvfTensorOut *outs = calloc (n + 1, sizeof *outs);
  void *scratch[4] = { NULL };
  int ns = 0;
  size_t k = 0;
  static char names[80][64];
  for (size_t i = 0; i < n; i++) {
    AvfWeightTensor t;
    avf_weights_tensor (w, i, &t);
    if (mu->drop && strcmp (t.name, mu->drop) == 0)
      continue;
    snprintf (names[k], sizeof names[k], "%s", t.name);
    outs[k].name = names[k];
    outs[k].dtype = AVF_DTYPE_F32;
    outs[k].ndim = t.ndim;
    memcpy (outs[k].shape, t.shape, sizeof t.shape);
    outs[k].data = t.data;
    if (mu->reshape && strcmp (t.name, mu->reshape) == 0) {
      outs[k].shape[0] *= 2;
      float *d = calloc (t.numel * 2, sizeof (float));
      outs[k].data = scratch[ns++] = d;
    }
    if (mu->as_f64 && strcmp (t.name, mu->as_f64) == 0) {
      double *d = calloc (t.numel, sizeof (double));
      outs[k].dtype = AVF_DTYPE_F64;
      outs[k].data = scratch[ns++] = d;
    }
    if (mu->nan_in && strcmp (t.name, mu->nan_in) == 0) {
      float *d = malloc (t.numel * sizeof (float));
      memcpy (d, t.data, t.numel * sizeof (float));
      d[3] = NAN;
      outs[k].data = scratch[ns++] = d;
    }
    k++;
  }
  static const float one = 1.0f;
  if (mu->extra) {
    outs[k] = (AvfTensorOut) {
    "decoder.bias", AVF_DTYPE_F32, 1, {1}, &one};
    k++;
  }
  AvfMetadataEntry meta[10] = {
    {"format", mu->format ? mu->format : "avfusion-v1"},
    {"num_heads", mu->heads ? mu->heads : "3"},
  };
  size_t nm = 2;
  if (mu->n_mels)
    meta[nm++] = (AvfMetadataEntry) {
    "n_mels", mu->n_mels};
  if (mu->threshold)
    meta[nm++] = (AvfMetadataEntry) {
    "visible_threshold", mu->threshold};
  if (mu->provenance) {
    /* keys the shipped model carries besides those of the spec */
    static const AvfMetadataEntry prov[] = {
      {"world", "sounding-objects-v1"},
      {"description", "avfusion-v1 trained on the sounding-objects world"},
      {"trained_by", "model/train.py"}, {"training_seed", "7"},
      {"training_steps", "20000"}, {"x-anything", "{\"nested\": [1, 2]}"},
    };
    for (size_t i = 0; i < sizeof prov / sizeof prov[0]; i++)
      meta[nm++] = prov[i];
  }
  const char *p = avf_test_tmp_path ("mutated.safetensors");
  AvfStatus st = avf_safetensors_write (p, outs, k, meta, nm, err);
  AVF_CHECK (st == AVF_OK, "writing: %s", err->message);
  st = avf_weights_load (&back, p, err);
  if (back && mu->cfg_out)
    *mu->cfg_out = back->cfg;
  avf_weights_free (back);
  avf_weights_free (w);
  for (int i = 0; i < ns; i++)
    free (scratch[i]);
  free (outs);
  unlink (p);
  return st;
}

#define EXPECT(mutation, status, text)                                  \
  do {                                                                  \
    AvfError e_;                                                        \
    Mutation m_ = mutation;                                             \
    AVF_CHECK (load_mutated (&m_, &e_) == (status), "status: %s",       \
        e_.message);                                                    \
    AVF_CHECK_CONTAINS (e_.message, text);                              \
  } while (0)

static void
test_missing_tensor (void)
{
  EXPECT (((Mutation) {.drop = "layers.1.video_ffn.2.bias"}), AVF_ERR_SHAPE,
      "weights file has no tensor \"layers.1.video_ffn.2.bias\" "
      "(expected shape [48])");
}

static void
test_missing_first_layer_tensor (void)
{
  EXPECT (((Mutation) {.drop = "layers.0.audio_ffn.0.weight"}),
      AVF_ERR_SHAPE, "no tensor \"layers.0.audio_ffn.0.weight\"");
}

static void
test_extra_tensor (void)
{
  EXPECT (((Mutation) {.extra = 1}), AVF_ERR_SHAPE,
      "unexpected tensor \"decoder.bias\"");
}

static void
test_misshapen_tensor (void)
{
  EXPECT (((Mutation) {.reshape = "layers.1.audio_cross.out_proj.weight"}),
      AVF_ERR_SHAPE, "tensor \"layers.1.audio_cross.out_proj.weight\" has "
      "shape [96, 48], expected [48, 48]");
}

static void
test_wrong_dtype (void)
{
  EXPECT (((Mutation) {.as_f64 = "video_pos"}), AVF_ERR_SHAPE,
      "tensor \"video_pos\" is F64, expected F32");
}

static void
test_heads_do_not_divide (void)
{
  EXPECT (((Mutation) {.heads = "5"}), AVF_ERR_SHAPE,
      "embedding width E 48 is not divisible by the number of heads H 5");
}

static void
test_bad_heads_metadata (void)
{
  EXPECT (((Mutation) {.heads = "three"}), AVF_ERR_FORMAT,
      "\"num_heads\" in __metadata__ is \"three\"");
}

static void
test_wrong_format (void)
{
  EXPECT (((Mutation) {.format = "gpt2"}), AVF_ERR_FORMAT,
      "format \"gpt2\", expected \"avfusion-v1\"");
}

static void
test_inconsistent_metadata (void)
{
  EXPECT (((Mutation) {.n_mels = "64"}), AVF_ERR_SHAPE,
      "\"n_mels\" in __metadata__ is 64 but tensor \"audio_proj.weight\" "
      "implies 40");
}

static void
test_non_finite_value (void)
{
  EXPECT (((Mutation) {.nan_in = "audio_pos"}), AVF_ERR_FORMAT,
      "tensor \"audio_pos\" holds a non-finite value");
}

/* visible_threshold: a finite number in (0, 1], whatever the notation;
 * anything else is refused naming the key. */
static void
test_visible_threshold (void)
{
  const struct
  {
    const char *text;
    float value;
  } good[] = {
    {"0.05", 0.05f}, {"1", 1.0f}, {"1.0", 1.0f}, {"5e-2", 0.05f},
    {".5", 0.5f}, {"0.0625", 0.0625f}, {"2.5E-1", 0.25f},
    {"0.000123456789", 0.000123456789f},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    AvfConfig c;
    AvfError e;
    Mutation m = {.threshold = good[i].text,.cfg_out = &c };
    AVF_CHECK (load_mutated (&m, &e) == AVF_OK, "\"%s\": %s", good[i].text,
        e.message);
    AVF_CHECK (c.visible_threshold == good[i].value, "\"%s\" read as %.9g",
        good[i].text, (double) c.visible_threshold);
  }
  const char *bad[] = { "0", "0.0", "-0.1", "1.5", "nan", "inf", "abc", "",
    " 0.5", "0.5 ", "0,05", "0.05x", "1e-50", "1e", ".", "+0.5", "0x0.1",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    AvfError e;
    Mutation m = {.threshold = bad[i] };
    AVF_CHECK (load_mutated (&m, &e) == AVF_ERR_FORMAT, "\"%s\" accepted",
        bad[i]);
    AVF_CHECK_CONTAINS (e.message, "\"visible_threshold\" in __metadata__");
    AVF_CHECK_CONTAINS (e.message, "expected a finite number in (0, 1]");
  }
  /* absent: 0, unknown */
  {
    AvfConfig c;
    AvfError e;
    Mutation m = {.cfg_out = &c };
    c.visible_threshold = -1.0f;
    AVF_CHECK (load_mutated (&m, &e) == AVF_OK, "%s", e.message);
    AVF_CHECK (c.visible_threshold == 0.0f, "absent threshold read as %g",
        (double) c.visible_threshold);
  }
}

/* The shipped model's extra metadata (world, description, training
 * provenance, any other key) is accepted. */
static void
test_unknown_metadata_keys (void)
{
  AvfConfig c;
  AvfError e;
  Mutation m = {.provenance = 1,.threshold = "0.05",.cfg_out = &c };
  AVF_CHECK (load_mutated (&m, &e) == AVF_OK, "%s", e.message);
  AVF_CHECK (c.visible_threshold == 0.05f && c.E == 48, "config");
}

static void
test_missing_file (void)
{
  AvfWeights *w = NULL;
  AvfError err;
  AVF_CHECK (avf_weights_load (&w, "/nonexistent/model.safetensors",
          &err) == AVF_ERR_NOT_FOUND, "status %d", err.status);
  AVF_CHECK_CONTAINS (err.message, "/nonexistent/model.safetensors");
  AVF_CHECK (w == NULL, "no object on failure");
}

static void
test_bad_configs (void)
{
  AvfConfig c = avf_config_default ();
  AvfWeights *w = NULL;
  AvfError err;
  c.E = 0;
  AVF_CHECK (avf_weights_new_default (&w, &c, 0, &err) == AVF_ERR_SHAPE,
      "E 0");
  AVF_CHECK_CONTAINS (err.message, "embedding width E is 0");
  c = avf_config_default ();
  c.N = 1 << 30;
  AVF_CHECK (avf_weights_new_default (&w, &c, 0, &err) == AVF_ERR_SHAPE,
      "huge N");
  AVF_CHECK_CONTAINS (err.message, "number of patches N");
  /* a patch of 4096 x 4096 pixels: 51 GB of built-in weights, refused
   * before any allocation */
  c = avf_config_default ();
  c.P = 4096;
  AVF_CHECK (avf_weights_new_default (&w, &c, 0, &err) == AVF_ERR_INVALID,
      "P 4096: status %d: %s", err.status, err.message);
  AVF_CHECK_CONTAINS (err.message, "P=4096");
  AVF_CHECK_CONTAINS (err.message, "more than the 1073741824 allowed");
  AVF_CHECK (w == NULL, "no object on failure");
  avf_weights_free (NULL);
}

/* Fuzzer findings (fuzz/regressions): a small file whose shapes imply a
 * huge model is refused before any model-sized allocation. */
static void
test_fuzz_regressions (void)
{
  const char *files[] = { "weights-oom-64-layers.safetensors",
    "weights-alloc-before-check.safetensors"
  };
  const char *expect[] = { "weights file has no tensor", "expected F32" };
  for (int i = 0; i < 2; i++) {
    char path[1024];
    AvfWeights *w = NULL;
    AvfError err;
    snprintf (path, sizeof path, "%s/../../fuzz/regressions/%s",
        avf_test_fixture_dir (), files[i]);
    AvfStatus st = avf_weights_load (&w, path, &err);
    AVF_CHECK (st == AVF_ERR_SHAPE, "%s: status %d: %s", files[i], st,
        err.message);
    AVF_CHECK_CONTAINS (err.message, expect[i]);
    AVF_CHECK (w == NULL, "no weights on failure");
  }
}

static void
test_cleanup (void)
{
  if (avf_test_tmp_dir ()[0])
    AVF_CHECK (rmdir (avf_test_tmp_dir ()) == 0, "temp dir left with files");
}

AVF_TEST_MAIN (AVF_TEST (test_prng_known_values),
    AVF_TEST (test_default_equals_pytorch_tool),
    AVF_TEST (test_same_seed_same_bytes),
    AVF_TEST (test_save_load_round_trip),
    AVF_TEST (test_pytorch_export_loads), AVF_TEST (test_missing_tensor),
    AVF_TEST (test_missing_first_layer_tensor), AVF_TEST (test_extra_tensor),
    AVF_TEST (test_misshapen_tensor), AVF_TEST (test_wrong_dtype),
    AVF_TEST (test_heads_do_not_divide), AVF_TEST (test_bad_heads_metadata),
    AVF_TEST (test_wrong_format), AVF_TEST (test_inconsistent_metadata),
    AVF_TEST (test_non_finite_value), AVF_TEST (test_visible_threshold),
    AVF_TEST (test_unknown_metadata_keys), AVF_TEST (test_missing_file),
    AVF_TEST (test_bad_configs), AVF_TEST (test_fuzz_regressions),
    AVF_TEST (test_cleanup))
