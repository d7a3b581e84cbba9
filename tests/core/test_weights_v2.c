/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avfusion-v2 weights files (docs/avfusion-v2.md §4): the PyTorch export
 * loads, a save/load round trip keeps every byte and the metadata, and
 * every way a v2 file can fail to be a model is refused naming the tensor
 * or the metadata key, each with its message.  (avfusion-v1 files:
 * test_weights.c, unchanged.)
 */
#include <stdlib.h>
#include <unistd.h>

#include "avf_test.h"
#include "weights.h"
#include "safetensors_write.h"


static AvfWeights *
load_fixture (void)
{
  return avf_test_load_weights_fixture ("v2_weights_small.safetensors");
}

static void
test_pytorch_export_loads (void)
{
  AvfWeights *w = load_fixture ();
  if (w) {
    AVF_CHECK (w->rhythm.D == 5 && w->rhythm.C == 3 && w->rhythm.Q == 2
        && w->rhythm.K == 10 && w->rhythm.G == 4 && w->rhythm.lags == 3
        && w->rhythm.lag_min == -1, "rhythm sizes");
    AVF_CHECK (w->cfg.E == 48 && w->cfg.H == 3 && w->cfg.L == 2, "v1 sizes");
    AVF_CHECK (w->rhythm_embed_weight && w->rhythm_embed_bias
        && w->audio_rhythm_weight && w->audio_rhythm_bias
        && w->rhythm_bin_weight && w->rhythm_proj_weight, "v2 pointers");
  }
  avf_weights_free (w);
}

/* A v1 file has no rhythm stage; a seeded model too unless asked. */
static void
test_v1_has_no_rhythm (void)
{
  char path[1024];
  AvfWeights *w = NULL;
  AvfError err;
  snprintf (path, sizeof path, "%s/weights_small.safetensors",
      avf_test_fixture_dir ());
  AVF_CHECK (avf_weights_load (&w, path, &err) == AVF_OK, "%s", err.message);
  if (w) {
    AVF_CHECK (w->rhythm.D == 0 && w->rhythm.K == 0 && w->rhythm.G == 0
        && w->rhythm.lags == 0 && w->rhythm.lag_min == 0
        && w->rhythm_embed_weight == NULL && w->rhythm_proj_weight == NULL,
        "v1 rhythm");
    AVF_CHECK (strcmp (avf_weights_format (w), "avfusion-v1") == 0, "%s",
        avf_weights_format (w));
    AVF_CHECK (avf_weights_n_tensors (w) == avf_weights_count (&w->cfg),
        "tensors");
  }
  avf_weights_free (w);
}

static void
test_save_load_round_trip (void)
{
  AvfWeights *a = load_fixture (), *b = NULL;
  AvfError err;
  const char *p = avf_test_tmp_path ("rt.safetensors");
  if (a == NULL)
    return;
  AVF_CHECK (avf_weights_save (a, p, &err) == AVF_OK, "%s", err.message);
  AVF_CHECK (avf_weights_load (&b, p, &err) == AVF_OK, "%s", err.message);
  if (b) {
    AVF_CHECK (memcmp (&a->cfg, &b->cfg, sizeof a->cfg) == 0, "config");
    AVF_CHECK (memcmp (&a->rhythm, &b->rhythm, sizeof a->rhythm) == 0,
        "rhythm config");
    AvfWeightTensor ta, tb;
    size_t n = 0;
    for (size_t i = 0; avf_weights_tensor (a, i, &ta); i++, n++) {
      AVF_CHECK (avf_weights_tensor (b, i, &tb), "%s", ta.name);
      AVF_CHECK (strcmp (ta.name, tb.name) == 0 && ta.numel == tb.numel
          && memcmp (ta.data, tb.data, ta.numel * 4) == 0, "%s", ta.name);
    }
    AVF_CHECK (n == avf_weights_n_tensors (a), "%zu tensors", n);
  }
  avf_weights_free (a);
  avf_weights_free (b);
  unlink (p);
}

/* Seeded v2 weights (tests only): deterministic, rhythm_bin_weight 1. */
static void
test_seeded_v2 (void)
{
  AvfConfig cfg = avf_config_default ();
  AvfRhythmConfig r = { 8, 8, 4, 25, 4, 5, -1, 1, 0 };
  AvfWeights *w = NULL;
  AvfError err;
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &r, 3, &err) == AVF_OK,
      "%s", err.message);
  if (w) {
    AvfWeightTensor t;
    AVF_CHECK (w->rhythm_bin_weight[0] == 1.0f
        && w->rhythm_bin_weight[5 * 25 - 1] == 1.0f, "bin weights");
    AVF_CHECK (strcmp (avf_weights_format (w), "avfusion-v2") == 0, "v2");
    AVF_CHECK (avf_weights_tensor (w, avf_weights_n_tensors (w) - 2, &t)
        && strcmp (t.name, "rhythm_bin_weight") == 0 && t.ndim == 2
        && t.shape[0] == 5 && t.shape[1] == 25, "%s", t.name);
    AVF_CHECK (avf_weights_tensor (w, avf_weights_n_tensors (w) - 1, &t)
        && t.shape[0] == 256 && t.shape[1] == 5 * 8 * 8, "rhythm_proj");
  }
  avf_weights_free (w);
  /* Q must divide P, K G fit T_max, the lags stay within K bins either
   * way, lags D C fits */
  AvfRhythmConfig q3 = { 8, 8, 3, 25, 4, 5, -1, 1, 0 };
  AvfRhythmConfig big = { 8, 8, 4, 26, 4, 5, -1, 1, 0 };
  AvfRhythmConfig early = { 8, 8, 4, 25, 4, 5, -26, 1, 0 };
  AvfRhythmConfig late = { 8, 8, 4, 25, 4, 5, 22, 1, 0 };
  AvfRhythmConfig no_lags = { 8, 8, 4, 25, 4, 0, 0, 1, 0 };
  AvfRhythmConfig wide = { 64, 64, 4, 25, 4, 17, 0, 1, 0 };
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &q3, 3, &err)
      == AVF_ERR_SHAPE, "Q 3");
  AVF_CHECK_CONTAINS (err.message, "Q 3 does not divide the patch size P 16");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &big, 3, &err)
      == AVF_ERR_SHAPE, "K 26");
  AVF_CHECK_CONTAINS (err.message, "26 rhythm bins of 4 audio slots need 104");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &early, 3, &err)
      == AVF_ERR_SHAPE, "lag_min -26");
  AVF_CHECK_CONTAINS (err.message, "rhythm_lag_min -26 with 5 lags reaches "
      "past the window's 25 bins");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &late, 3, &err)
      == AVF_ERR_SHAPE, "lags 22 .. 26");
  AVF_CHECK_CONTAINS (err.message, "(lags 22 .. 26; each must be within "
      "-25 .. 25)");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &no_lags, 3, &err)
      == AVF_ERR_SHAPE, "no lags");
  AVF_CHECK_CONTAINS (err.message, "rhythm lags is 0, expected 1..65536");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &wide, 3, &err)
      == AVF_ERR_SHAPE, "lags D C");
  AVF_CHECK_CONTAINS (err.message, "17 rhythm lags times rhythm features D "
      "64 times audio rhythm features C 64 is above 65536");
}

/* ---- malformed v2 files ------------------------------------------------- */

typedef struct
{
  const char *drop;             /* tensor to leave out */
  const char *reshape;          /* tensor written with `shape` */
  int ndim;
  uint64_t shape[4];
  const char *as_f64;           /* tensor written as F64 */
  const char *nan_in;           /* tensor with a NaN */
  const char *format;           /* format metadata ("avfusion-v2") */
  const char *slots;            /* rhythm_bin_slots ("4"; "" = none) */
  const char *lag;              /* rhythm_lag_min ("-1"; "" = none) */
  const char *hood;             /* rhythm_neighbourhood (NULL = none) */
  const char *from;             /* rhythm_neighbourhood_from (NULL = none) */
  int v1_only;                  /* write only the v1 tensors */
} Mutation;

/* the rhythm_neighbourhood (and _from) of the last file load_mutated read
 * (0: none) */
static int loaded_neighbourhood, loaded_from;

static AvfStatus
load_mutated (const Mutation * mu, AvfError * err)
{
  AvfWeights *w = load_fixture (), *back = NULL;
  if (w == NULL)
    return AVF_ERR_INVALID;
  size_t n = mu->v1_only ? avf_weights_count (&w->cfg) :
      avf_weights_n_tensors (w);
  AvfTensorOut *outs = calloc (n, sizeof *outs);
  AvfWeightTensor *ts = calloc (n, sizeof *ts);
  void *scratch = NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    AvfWeightTensor *t = &ts[i];
    avf_weights_tensor (w, i, t);
    if (mu->drop && strcmp (t->name, mu->drop) == 0)
      continue;
    outs[k].name = t->name;
    outs[k].dtype = AVF_DTYPE_F32;
    outs[k].ndim = t->ndim;
    memcpy (outs[k].shape, t->shape, sizeof t->shape);
    outs[k].data = t->data;
    if (mu->reshape && strcmp (t->name, mu->reshape) == 0) {
      uint64_t numel = 1;
      outs[k].ndim = mu->ndim;
      for (int d = 0; d < mu->ndim; d++) {
        outs[k].shape[d] = mu->shape[d];
        numel *= mu->shape[d];
      }
      outs[k].data = scratch = calloc (numel, sizeof (float));
    }
    if (mu->as_f64 && strcmp (t->name, mu->as_f64) == 0) {
      outs[k].dtype = AVF_DTYPE_F64;
      outs[k].data = scratch = calloc (t->numel, sizeof (double));
    }
    if (mu->nan_in && strcmp (t->name, mu->nan_in) == 0) {
      float *d = malloc (t->numel * sizeof (float));
      memcpy (d, t->data, t->numel * sizeof (float));
      d[t->numel - 1] = NAN;
      outs[k].data = scratch = d;
    }
    k++;
  }
  AvfMetadataEntry meta[6] = {
    {"format", mu->format ? mu->format : "avfusion-v2"},
    {"num_heads", "3"},
  };
  size_t nm = 2;
  if (!mu->slots || mu->slots[0] != '\0')
    meta[nm++] = (AvfMetadataEntry) {
    "rhythm_bin_slots", mu->slots ? mu->slots : "4"};
  if (!mu->lag || mu->lag[0] != '\0')
    meta[nm++] = (AvfMetadataEntry) {
    "rhythm_lag_min", mu->lag ? mu->lag : "-1"};
  if (mu->hood)
    meta[nm++] = (AvfMetadataEntry) {
    "rhythm_neighbourhood", mu->hood};
  if (mu->from)
    meta[nm++] = (AvfMetadataEntry) {
    "rhythm_neighbourhood_from", mu->from};
  const char *p = avf_test_tmp_path ("mutated.safetensors");
  AvfStatus st = avf_safetensors_write (p, outs, k, meta, nm, err);
  AVF_CHECK (st == AVF_OK, "writing: %s", err->message);
  st = avf_weights_load (&back, p, err);
  AVF_CHECK ((st == AVF_OK) == (back != NULL), "object only on success");
  loaded_neighbourhood = back ? back->rhythm.neighbourhood : 0;
  loaded_from = back ? back->rhythm.neighbourhood_from : 0;
  avf_weights_free (back);
  avf_weights_free (w);
  free (scratch);
  free (outs);
  free (ts);
  unlink (p);
  return st;
}

#define EXPECT(mutation, status, text)                                  \
  do {                                                                  \
    AvfError e_;                                                        \
    Mutation m_ = mutation;                                             \
    AvfStatus s_ = load_mutated (&m_, &e_);                             \
    AVF_CHECK (s_ == (status), "status %d: %s", s_, e_.message);        \
    AVF_CHECK_CONTAINS (e_.message, text);                              \
  } while (0)

/* Each v2 tensor missing, named. */
static void
test_missing_tensors (void)
{
  EXPECT (((Mutation) {.drop = "rhythm_embed.weight"}), AVF_ERR_SHAPE,
      "no tensor \"rhythm_embed.weight\", which every avfusion-v2 model "
      "needs");
  EXPECT (((Mutation) {.drop = "rhythm_embed.bias"}), AVF_ERR_SHAPE,
      "no tensor \"rhythm_embed.bias\" (expected shape [5])");
  EXPECT (((Mutation) {.drop = "audio_rhythm.weight"}), AVF_ERR_SHAPE,
      "no tensor \"audio_rhythm.weight\", which every avfusion-v2 model "
      "needs");
  EXPECT (((Mutation) {.drop = "audio_rhythm.bias"}), AVF_ERR_SHAPE,
      "no tensor \"audio_rhythm.bias\" (expected shape [3])");
  EXPECT (((Mutation) {.drop = "rhythm_bin_weight"}), AVF_ERR_SHAPE,
      "no tensor \"rhythm_bin_weight\", which every avfusion-v2 model needs");
  EXPECT (((Mutation) {.drop = "rhythm_proj.weight"}), AVF_ERR_SHAPE,
      "no tensor \"rhythm_proj.weight\" (expected shape [48, 45])");
  /* a v1 tensor missing from a v2 file: v2 named as the format */
  EXPECT (((Mutation) {.drop = "video_pos"}), AVF_ERR_SHAPE,
      "no tensor \"video_pos\", which every avfusion-v2 model needs");
  /* a v1 tensor set labelled avfusion-v2 */
  EXPECT (((Mutation) {.v1_only = 1}), AVF_ERR_SHAPE,
      "no tensor \"rhythm_embed.weight\", which every avfusion-v2 model "
      "needs");
}

/* Each v2 tensor misshapen, named with the shape expected and found. */
static void
test_misshapen_tensors (void)
{
  EXPECT (((Mutation) {.reshape = "rhythm_embed.weight",.ndim = 4,.shape =
              {5, 3, 3, 3}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_embed.weight\" has shape [5, 3, 3, 3], expected "
      "[D, 3, Q, Q] with Q dividing the patch size 8");
  EXPECT (((Mutation) {.reshape = "rhythm_embed.weight",.ndim = 4,.shape =
              {5, 4, 2, 2}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_embed.weight\" has shape [5, 4, 2, 2], expected "
      "[D, 3, Q, Q]");
  EXPECT (((Mutation) {.reshape = "rhythm_embed.weight",.ndim = 2,.shape =
              {5, 12}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_embed.weight\" has shape [5, 12], expected 4 "
      "dimensions");
  EXPECT (((Mutation) {.reshape = "rhythm_embed.bias",.ndim = 1,.shape =
              {6}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_embed.bias\" has shape [6], expected [5]");
  EXPECT (((Mutation) {.reshape = "audio_rhythm.weight",.ndim = 2,.shape =
              {3, 41}}), AVF_ERR_SHAPE,
      "tensor \"audio_rhythm.weight\" has shape [3, 41], expected [3, 40]");
  EXPECT (((Mutation) {.reshape = "audio_rhythm.bias",.ndim = 1,.shape =
              {4}}), AVF_ERR_SHAPE,
      "tensor \"audio_rhythm.bias\" has shape [4], expected [3]");
  /* [lags, K]: the first draft's [K] and a third dimension refused */
  EXPECT (((Mutation) {.reshape = "rhythm_bin_weight",.ndim = 1,.shape =
              {10}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_bin_weight\" has shape [10], expected 2 dimensions "
      "[lags, K]");
  EXPECT (((Mutation) {.reshape = "rhythm_bin_weight",.ndim = 3,.shape =
              {3, 10, 1}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_bin_weight\" has shape [3, 10, 1], expected 2 "
      "dimensions [lags, K]");
  EXPECT (((Mutation) {.reshape = "rhythm_bin_weight",.ndim = 2,.shape =
              {0, 10}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_bin_weight\" has shape [0, 10]; each size must be "
      "1..65536");
  /* 11 bins of 4 slots: more than audio_pos's 40 positions */
  EXPECT (((Mutation) {.reshape = "rhythm_bin_weight",.ndim = 2,.shape =
              {3, 11}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_bin_weight\" has 11 bins of 4 audio slots "
      "(\"rhythm_bin_slots\"), 44 in all, but tensor \"audio_pos\" has "
      "positions for 40");
  /* 2 lags read off rhythm_bin_weight: rhythm_proj has 3 lags' columns */
  EXPECT (((Mutation) {.reshape = "rhythm_bin_weight",.ndim = 2,.shape =
              {2, 10}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_proj.weight\" has shape [48, 45], expected [48, 30]");
  EXPECT (((Mutation) {.reshape = "rhythm_proj.weight",.ndim = 2,.shape =
              {48, 15}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_proj.weight\" has shape [48, 15], expected [48, 45]");
  EXPECT (((Mutation) {.reshape = "rhythm_proj.weight",.ndim = 2,.shape =
              {48, 46}}), AVF_ERR_SHAPE,
      "tensor \"rhythm_proj.weight\" has shape [48, 46], expected [48, 45]");
  EXPECT (((Mutation) {.as_f64 = "rhythm_proj.weight"}), AVF_ERR_SHAPE,
      "tensor \"rhythm_proj.weight\" is F64, expected F32");
  EXPECT (((Mutation) {.nan_in = "rhythm_bin_weight"}), AVF_ERR_FORMAT,
      "tensor \"rhythm_bin_weight\" holds a non-finite value");
}

/* The metadata: rhythm_bin_slots is needed and checked; v2 tensors in a
 * file labelled avfusion-v1 are refused. */
static void
test_metadata (void)
{
  EXPECT (((Mutation) {.slots = ""}), AVF_ERR_FORMAT,
      "no \"rhythm_bin_slots\" in __metadata__");
  EXPECT (((Mutation) {.slots = "four"}), AVF_ERR_FORMAT,
      "\"rhythm_bin_slots\" in __metadata__ is \"four\", expected a positive "
      "integer");
  EXPECT (((Mutation) {.slots = "0"}), AVF_ERR_FORMAT,
      "\"rhythm_bin_slots\" in __metadata__ is \"0\"");
  EXPECT (((Mutation) {.slots = "5"}), AVF_ERR_SHAPE,
      "10 bins of 5 audio slots (\"rhythm_bin_slots\"), 50 in all");
  EXPECT (((Mutation) {.format = "avfusion-v1"}), AVF_ERR_SHAPE,
      "unexpected tensor \"rhythm_embed.weight\" (a 2-layer avfusion-v1 "
      "model has 78 tensors)");
  EXPECT (((Mutation) {.format = "avfusion-v3"}), AVF_ERR_FORMAT,
      "format \"avfusion-v3\", expected \"avfusion-v1\" or \"avfusion-v2\"");
}

/* rhythm_lag_min: needed, an integer (any sign), and the lags it starts
 * (3 of them, rhythm_bin_weight [3, 10]) within the window's 10 bins
 * either way. */
static void
test_lag_min (void)
{
  EXPECT (((Mutation) {.lag = ""}), AVF_ERR_FORMAT,
      "weights file has no \"rhythm_lag_min\" in __metadata__");
  EXPECT (((Mutation) {.lag = "one"}), AVF_ERR_FORMAT,
      "\"rhythm_lag_min\" in __metadata__ is \"one\", expected an integer");
  EXPECT (((Mutation) {.lag = "-1.5"}), AVF_ERR_FORMAT,
      "\"rhythm_lag_min\" in __metadata__ is \"-1.5\", expected an "
      "integer");
  EXPECT (((Mutation) {.lag = "-1.0"}), AVF_ERR_FORMAT,
      "is \"-1.0\", expected an integer");
  EXPECT (((Mutation) {.lag = " -1"}), AVF_ERR_FORMAT,
      "is \" -1\", expected an integer");
  EXPECT (((Mutation) {.lag = "-"}), AVF_ERR_FORMAT,
      "is \"-\", expected an integer");
  EXPECT (((Mutation) {.lag = "1e0"}), AVF_ERR_FORMAT,
      "is \"1e0\", expected an integer");
  /* out of range: |lag_min| <= K, |lag_min + lags - 1| <= K */
  EXPECT (((Mutation) {.lag = "-11"}), AVF_ERR_SHAPE,
      "\"rhythm_lag_min\" in __metadata__ is -11: with 3 lags (tensor "
      "\"rhythm_bin_weight\" [3, 10]) the lags -11 .. -9 reach past the "
      "window's 10 bins (each must be within -10 .. 10)");
  EXPECT (((Mutation) {.lag = "9"}), AVF_ERR_SHAPE,
      "\"rhythm_lag_min\" in __metadata__ is 9: with 3 lags (tensor "
      "\"rhythm_bin_weight\" [3, 10]) the lags 9 .. 11 reach past");
  EXPECT (((Mutation) {.lag = "-99999999999999999999"}), AVF_ERR_SHAPE,
      "is -99999999999999999999: with 3 lags");
  EXPECT (((Mutation) {.lag = "4294967295"}), AVF_ERR_SHAPE,
      "is 4294967295: with 3 lags");
  /* the edges load, and so does an explicit sign */
  const struct
  {
    const char *text;
    int value;
  } ok[] = { {"-10", -10}, {"8", 8}, {"+0", 0}, {"-0", 0}, {"007", 7} };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    AvfError e;
    Mutation m = {.lag = ok[i].text };
    AVF_CHECK (load_mutated (&m, &e) == AVF_OK, "\"%s\": %s", ok[i].text,
        e.message);
  }
  /* and the value is the one read */
  AvfWeights *w = load_fixture ();
  AvfWeights *back = NULL;
  AvfError err;
  if (w) {
    const char *p = avf_test_tmp_path ("lag8.safetensors");
    w->rhythm.lag_min = 8;
    AVF_CHECK (avf_weights_save (w, p, &err) == AVF_OK, "%s", err.message);
    AVF_CHECK (avf_weights_load (&back, p, &err) == AVF_OK, "%s",
        err.message);
    AVF_CHECK (back && back->rhythm.lag_min == 8 && back->rhythm.lags == 3,
        "lag_min read back");
    unlink (p);
  }
  avf_weights_free (back);
  avf_weights_free (w);
}

/* rhythm_neighbourhood: optional (absent: 1), an odd integer from 1 to
 * 2 ceil(sqrt(N)) - 1, 7 for the fixture's N 12 patches; any other value is
 * refused naming the key, the value and the range. */
static void
test_neighbourhood (void)
{
  AvfError e;
  Mutation none = { 0 };
  AVF_CHECK (load_mutated (&none, &e) == AVF_OK, "%s", e.message);
  AVF_CHECK (loaded_neighbourhood == 1, "absent: %d", loaded_neighbourhood);
  const struct
  {
    const char *text;
    int value;
  } ok[] = { {"1", 1}, {"3", 3}, {"5", 5}, {"7", 7}, {"+3", 3}, {"03", 3} };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    Mutation m = {.hood = ok[i].text };
    AVF_CHECK (load_mutated (&m, &e) == AVF_OK, "\"%s\": %s", ok[i].text,
        e.message);
    AVF_CHECK (loaded_neighbourhood == ok[i].value, "\"%s\" read as %d",
        ok[i].text, loaded_neighbourhood);
  }
  EXPECT (((Mutation) {.hood = "4"}), AVF_ERR_FORMAT,
      "\"rhythm_neighbourhood\" in __metadata__ is 4, expected an odd "
      "integer from 1 to 7 (2 ceil(sqrt(N)) - 1 for the N 12 patches of "
      "tensor \"video_pos\")");
  EXPECT (((Mutation) {.hood = "0"}), AVF_ERR_FORMAT,
      "\"rhythm_neighbourhood\" in __metadata__ is 0, expected an odd "
      "integer from 1 to 7");
  EXPECT (((Mutation) {.hood = "-1"}), AVF_ERR_FORMAT,
      "\"rhythm_neighbourhood\" in __metadata__ is -1, expected an odd "
      "integer from 1 to 7");
  EXPECT (((Mutation) {.hood = "x"}), AVF_ERR_FORMAT,
      "\"rhythm_neighbourhood\" in __metadata__ is \"x\", expected an odd "
      "integer from 1 to 7");
  EXPECT (((Mutation) {.hood = "3.0"}), AVF_ERR_FORMAT,
      "is \"3.0\", expected an odd integer from 1 to 7");
  EXPECT (((Mutation) {.hood = ""}), AVF_ERR_FORMAT,
      "is \"\", expected an odd integer from 1 to 7");
  EXPECT (((Mutation) {.hood = "9"}), AVF_ERR_SHAPE,
      "\"rhythm_neighbourhood\" in __metadata__ is 9, expected an odd "
      "integer from 1 to 7 (2 ceil(sqrt(N)) - 1 for the N 12 patches of "
      "tensor \"video_pos\")");
  EXPECT (((Mutation) {.hood = "99999999999999999999"}), AVF_ERR_SHAPE,
      "is 99999999999999999999, expected an odd integer from 1 to 7");
  /* a model built in code: 0 means 1, and the same range */
  AvfConfig cfg = avf_config_default ();
  AvfRhythmConfig r0 = { 8, 8, 4, 25, 4, 5, -1, 0, 0 };
  AvfRhythmConfig r27 = { 8, 8, 4, 25, 4, 5, -1, 27, 0 };
  AvfRhythmConfig r4 = { 8, 8, 4, 25, 4, 5, -1, 4, 0 };
  AvfRhythmConfig r29 = { 8, 8, 4, 25, 4, 5, -1, 29, 0 };
  AvfWeights *w = NULL, *back = NULL;
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &r0, 3, &e)
      == AVF_OK, "neighbourhood 0");
  AVF_CHECK (w && w->rhythm.neighbourhood == 1, "0 kept as %d",
      w ? w->rhythm.neighbourhood : -1);
  avf_weights_free (w);
  w = NULL;
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &r4, 3, &e)
      == AVF_ERR_SHAPE, "neighbourhood 4");
  AVF_CHECK_CONTAINS (e.message, "rhythm_neighbourhood 4: expected an odd "
      "number from 1 to 27 (2 ceil(sqrt(N)) - 1 for N 196 patches)");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &r29, 3, &e)
      == AVF_ERR_SHAPE, "neighbourhood 29");
  AVF_CHECK_CONTAINS (e.message, "rhythm_neighbourhood 29: expected an odd "
      "number from 1 to 27");
  AVF_CHECK (avf_rhythm_neighbourhood_max (1) == 1
      && avf_rhythm_neighbourhood_max (12) == 7
      && avf_rhythm_neighbourhood_max (16) == 7
      && avf_rhythm_neighbourhood_max (17) == 9
      && avf_rhythm_neighbourhood_max (196) == 27, "2 ceil(sqrt(N)) - 1");
  /* the save/load round trip keeps it (written only when above 1) */
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &r27, 3, &e) == AVF_OK,
      "%s", e.message);
  if (w) {
    const char *p = avf_test_tmp_path ("hood27.safetensors");
    AVF_CHECK (avf_weights_save (w, p, &e) == AVF_OK, "%s", e.message);
    AVF_CHECK (avf_weights_load (&back, p, &e) == AVF_OK, "%s", e.message);
    AVF_CHECK (back && back->rhythm.neighbourhood == 27,
        "neighbourhood read back");
    unlink (p);
  }
  avf_weights_free (back);
  avf_weights_free (w);
}

/* rhythm_neighbourhood_from: optional (absent: 0), 0 or 1 .. D - 1 (4 for
 * the fixture's D 5) with a rhythm_neighbourhood above 1; anything else is
 * refused naming the key, the value and the range. */
static void
test_neighbourhood_from (void)
{
  AvfError e;
  Mutation none = {.hood = "5" };
  AVF_CHECK (load_mutated (&none, &e) == AVF_OK, "%s", e.message);
  AVF_CHECK (loaded_from == 0, "absent: %d", loaded_from);
  const struct
  {
    const char *text;
    int value;
  } ok[] = { {"0", 0}, {"1", 1}, {"2", 2}, {"4", 4}, {"+3", 3} };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    Mutation m = {.hood = "5",.from = ok[i].text };
    AVF_CHECK (load_mutated (&m, &e) == AVF_OK, "\"%s\": %s", ok[i].text,
        e.message);
    AVF_CHECK (loaded_from == ok[i].value && loaded_neighbourhood == 5,
        "\"%s\" read as %d (neighbourhood %d)", ok[i].text, loaded_from,
        loaded_neighbourhood);
  }
  EXPECT (((Mutation) {.hood = "5",.from = "5"}), AVF_ERR_FORMAT,
      "\"rhythm_neighbourhood_from\" in __metadata__ is 5, expected 0, or "
      "1 to 4 (the rhythm features D 5 of tensor \"rhythm_embed.weight\") "
      "with a \"rhythm_neighbourhood\" above 1 (it is 5)");
  EXPECT (((Mutation) {.hood = "5",.from = "-1"}), AVF_ERR_FORMAT,
      "is -1, expected 0, or 1 to 4");
  EXPECT (((Mutation) {.from = "2"}), AVF_ERR_FORMAT,
      "is 2, expected 0, or 1 to 4 (the rhythm features D 5 of tensor "
      "\"rhythm_embed.weight\") with a \"rhythm_neighbourhood\" above 1 "
      "(it is 1)");
  EXPECT (((Mutation) {.hood = "5",.from = "x"}), AVF_ERR_FORMAT,
      "\"rhythm_neighbourhood_from\" in __metadata__ is \"x\", expected an "
      "integer from 0 to 4");
  EXPECT (((Mutation) {.hood = "5",.from = "99999999999999999999"}),
      AVF_ERR_FORMAT, "is 99999999999999999999, expected 0, or 1 to 4");
  /* a model built in code: the same range, and the round trip keeps it */
  AvfConfig cfg = avf_config_default ();
  AvfRhythmConfig f4 = { 8, 8, 4, 25, 4, 5, -1, 5, 4 };
  AvfRhythmConfig f8 = { 8, 8, 4, 25, 4, 5, -1, 5, 8 };
  AvfRhythmConfig k1 = { 8, 8, 4, 25, 4, 5, -1, 1, 3 };
  AvfWeights *w = NULL, *back = NULL;
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &f8, 3, &e)
      == AVF_ERR_SHAPE, "from 8 of D 8");
  AVF_CHECK_CONTAINS (e.message, "rhythm_neighbourhood_from 8: expected 0, "
      "or 1 to 7 (rhythm features D 8) with a rhythm_neighbourhood above 1 "
      "(it is 5)");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &k1, 3, &e)
      == AVF_ERR_SHAPE, "from 3 at neighbourhood 1");
  AVF_CHECK_CONTAINS (e.message, "rhythm_neighbourhood_from 3: expected 0, "
      "or 1 to 7 (rhythm features D 8) with a rhythm_neighbourhood above 1 "
      "(it is 1)");
  AVF_CHECK (avf_weights_new_default_v2 (&w, &cfg, &f4, 3, &e) == AVF_OK,
      "%s", e.message);
  if (w) {
    const char *p = avf_test_tmp_path ("from4.safetensors");
    AVF_CHECK (avf_weights_save (w, p, &e) == AVF_OK, "%s", e.message);
    AVF_CHECK (avf_weights_load (&back, p, &e) == AVF_OK, "%s", e.message);
    AVF_CHECK (back && back->rhythm.neighbourhood == 5
        && back->rhythm.neighbourhood_from == 4, "from read back as %d",
        back ? back->rhythm.neighbourhood_from : -1);
    unlink (p);
  }
  avf_weights_free (back);
  avf_weights_free (w);
}

static void
test_cleanup (void)
{
  if (avf_test_tmp_dir ()[0])
    AVF_CHECK (rmdir (avf_test_tmp_dir ()) == 0, "temp dir left with files");
}

AVF_TEST_MAIN (AVF_TEST (test_pytorch_export_loads),
    AVF_TEST (test_v1_has_no_rhythm), AVF_TEST (test_save_load_round_trip),
    AVF_TEST (test_seeded_v2), AVF_TEST (test_missing_tensors),
    AVF_TEST (test_misshapen_tensors), AVF_TEST (test_metadata),
    AVF_TEST (test_lag_min), AVF_TEST (test_neighbourhood),
    AVF_TEST (test_neighbourhood_from), AVF_TEST (test_cleanup))
