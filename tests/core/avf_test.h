/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A minimal test harness for the core suite (no GLib in core).  Each test
 * program registers functions with AVF_TEST_MAIN; a failing check prints
 * file:line and the message, and the program exits non-zero.
 */
#ifndef AVF_TEST_H
#define AVF_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int avf_test_failures_ = 0;
static int avf_test_checks_ = 0;

#define AVF_CHECK(cond, ...)                                          \
  do {                                                                \
    avf_test_checks_++;                                               \
    if (!(cond)) {                                                    \
      avf_test_failures_++;                                           \
      fprintf (stderr, "%s:%d: check failed: %s: ", __FILE__,         \
          __LINE__, #cond);                                           \
      fprintf (stderr, __VA_ARGS__);                                  \
      fputc ('\n', stderr);                                           \
    }                                                                 \
  } while (0)

/* Checks that a string contains a substring. */
#define AVF_CHECK_CONTAINS(haystack, needle)                          \
  AVF_CHECK (strstr ((haystack), (needle)) != NULL,                   \
      "\"%s\" does not contain \"%s\"", (haystack), (needle))

/* Max abs difference of two float arrays; NaN in either side counts as
 * infinite unless both are NaN. */
static inline double
avf_test_max_abs_diff (const float *a, const float *b, size_t n)
{
  double m = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (isnan (a[i]) && isnan (b[i]))
      continue;
    double d = fabs ((double) a[i] - (double) b[i]);
    if (isnan (d))
      return INFINITY;
    if (d > m)
      m = d;
  }
  return m;
}

#define AVF_CHECK_CLOSE(a, b, n, tol, what)                           \
  do {                                                                \
    double avf_d_ = avf_test_max_abs_diff ((a), (b), (n));            \
    AVF_CHECK (avf_d_ <= (tol), "%s: max abs error %.3g > %.3g",      \
        (what), avf_d_, (double) (tol));                              \
    if (getenv ("AVF_TEST_VERBOSE"))                                  \
      printf ("  %s: max abs error %.3g (tol %.3g)\n", (what), avf_d_, \
          (double) (tol));                                            \
  } while (0)

typedef struct {
  const char *name;
  void (*fn) (void);
} AvfTestCase;

static inline int
avf_test_run (const AvfTestCase * cases, size_t n, int argc, char **argv)
{
  int failed_cases = 0, run = 0;
  for (size_t i = 0; i < n; i++) {
    if (argc > 1 && strstr (cases[i].name, argv[1]) == NULL)
      continue;
    int before = avf_test_failures_;
    cases[i].fn ();
    run++;
    if (avf_test_failures_ != before) {
      failed_cases++;
      printf ("FAIL %s\n", cases[i].name);
    } else {
      printf ("ok   %s\n", cases[i].name);
    }
  }
  printf ("%d passed, %d failed\n", run - failed_cases, failed_cases);
  return failed_cases == 0 && run > 0 ? 0 : 1;
}

#define AVF_TEST_MAIN(...)                                            \
  int main (int argc, char **argv)                                    \
  {                                                                   \
    static const AvfTestCase cases_[] = { __VA_ARGS__ };              \
    return avf_test_run (cases_, sizeof cases_ / sizeof cases_[0],    \
        argc, argv);                                                  \
  }

#define AVF_TEST(fn) { #fn, fn }

/* Directory of the committed fixtures, set by meson. */
static inline const char *
avf_test_fixture_dir (void)
{
  const char *d = getenv ("AVF_FIXTURE_DIR");
  return d ? d : "tests/fixtures";
}

/* Fixture access: a safetensors file from the fixture directory, and F32 /
 * U8 tensors by name with a checked shape.  A missing fixture is a failed
 * check, never a silent skip. */
#include "safetensors.h"

static inline AvfSafetensors *
avf_test_open_fixture (const char *file)
{
  char path[1024];
  AvfSafetensors *st = NULL;
  AvfError err;
  snprintf (path, sizeof path, "%s/%s", avf_test_fixture_dir (), file);
  AvfStatus s = avf_safetensors_open (&st, path, &err);
  AVF_CHECK (s == AVF_OK, "cannot open fixture %s: %s", path, err.message);
  return s == AVF_OK ? st : NULL;
}

/* A weights file from the fixture directory, loaded; NULL after a failed
 * check. */
#include "weights.h"

static inline AvfWeights *
avf_test_load_weights_fixture (const char *file)
{
  char path[1024];
  AvfWeights *w = NULL;
  AvfError err;
  snprintf (path, sizeof path, "%s/%s", avf_test_fixture_dir (), file);
  AVF_CHECK (avf_weights_load (&w, path, &err) == AVF_OK, "%s", err.message);
  return w;
}

/* The packed RGB picture @rgb (@width x @height) in @layout, each row
 * followed by @pad bytes; every byte no pixel writes is @fill.  Its row
 * stride in *@stride; free (). */
#include "patch_embed.h"

static inline uint8_t *
avf_test_pack_rgb (const uint8_t * rgb, int width, int height,
    AvfPixelLayout layout, size_t pad, uint8_t fill, size_t * stride)
{
  *stride = (size_t) width * layout.bpp + pad;
  uint8_t *img = malloc (*stride * height);
  memset (img, fill, *stride * height);
  for (int y = 0; y < height; y++)
    for (int x = 0; x < width; x++) {
      uint8_t *p = img + y * *stride + (size_t) x * layout.bpp;
      const uint8_t *s = rgb + ((size_t) y * width + x) * 3;
      p[layout.r] = s[0];
      p[layout.g] = s[1];
      p[layout.b] = s[2];
    }
  return img;
}

/* This program's own temporary folder ("" until avf_test_tmp_path first
 * makes it, tests/support/avf_tmpdir.h), and a path in it. */
#include "avf_tmpdir.h"

static inline char *
avf_test_tmp_dir (void)
{
  static char dir[256];
  return dir;
}

static inline const char *
avf_test_tmp_path (const char *name)
{
  static char path[512];
  char *dir = avf_test_tmp_dir ();
  if (dir[0] == '\0') {
    char *made = avf_tmp_dir_new ("avf-test");
    snprintf (dir, 256, "%s", made);
    free (made);
  }
  snprintf (path, sizeof path, "%s/%s", dir, name);
  return path;
}

/* Returns the data of tensor `name` (copied into a fresh aligned buffer the
 * caller frees), or NULL after a failed check.  numel_out is optional. */
static inline void *
avf_test_tensor (const AvfSafetensors * st, const char *name, AvfDtype dtype,
    size_t *numel_out)
{
  const AvfTensorInfo *t = st ? avf_safetensors_find (st, name) : NULL;
  AVF_CHECK (t != NULL, "fixture has no tensor %s", name);
  if (t == NULL)
    return NULL;
  AVF_CHECK (t->dtype == dtype, "fixture tensor %s has dtype %s", name,
      avf_dtype_name (t->dtype));
  size_t bytes = (size_t) (t->end - t->begin);
  void *p = malloc (bytes ? bytes : 1);
  memcpy (p, t->data, bytes);
  if (numel_out)
    *numel_out = (size_t) t->numel;
  return p;
}

static inline int
avf_test_meta_int (const AvfSafetensors * st, const char *key)
{
  const char *v = st ? avf_safetensors_metadata (st, key) : NULL;
  AVF_CHECK (v != NULL, "fixture metadata has no %s", key);
  return v ? atoi (v) : 0;
}

/* The weights a fixture names in its metadata "weights": a file of the
 * fixture directory, or "built-in" (the default config, seeded with the
 * fixture's metadata @seed_key, 0 without one); NULL after a failed
 * check. */
static inline AvfWeights *
avf_test_fixture_weights (const AvfSafetensors * fx, const char *seed_key)
{
  const char *wname = avf_safetensors_metadata (fx, "weights");
  AvfWeights *w = NULL;
  AvfError err;
  if (wname && strcmp (wname, "built-in") == 0) {
    AvfConfig cfg = avf_config_default ();
    uint64_t seed = seed_key ? (uint64_t) avf_test_meta_int (fx, seed_key)
        : 0;
    AVF_CHECK (avf_weights_new_default (&w, &cfg, seed, &err) == AVF_OK,
        "%s", err.message);
  } else {
    char path[1024];
    snprintf (path, sizeof path, "%s/%s", avf_test_fixture_dir (),
        wname ? wname : "?");
    AVF_CHECK (avf_weights_load (&w, path, &err) == AVF_OK, "%s",
        err.message);
  }
  return w;
}

#endif /* AVF_TEST_H */
