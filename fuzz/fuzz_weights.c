/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * fuzz_weights: libFuzzer harness for the avfusion-v1 weights loader
 * (core/weights.c).  Each input is parsed as a safetensors file image and,
 * when that succeeds, handed to avf_weights_from_safetensors.  A refused
 * tensor set must come back as an error with a message.  An accepted one
 * must keep the promises of weights.h (E % H == 0, every size in range,
 * every tensor present, F32, finite and equal to the file's bytes); a broken
 * promise is a bug in the loader and stops the fuzzer with a trap.
 *
 * Memory: every tensor the loader keeps is in the file, so loading a file
 * of S bytes needs about S bytes.  A malloc hook traps, at the allocation
 * itself, when one call of avf_weights_from_safetensors allocates more than
 * ALLOC_FACTOR * S + ALLOC_SLACK bytes in all: a small file must not make
 * the loader reserve gigabytes (robustness: no OOM on any file).
 *
 * Random byte changes to a weights file almost never give another valid
 * safetensors file: a longer name breaks the header length, a new shape
 * breaks data_offsets.  So a custom mutator, two times out of three, mutates
 * the header text alone and then repairs the file around it: data_offsets
 * are rewritten to tile the data area in header order with shape x dtype
 * bytes each, the data area is cut or zero-filled to match, and the 8-byte
 * length is set.  Half of those header mutations put a size the loader
 * must judge (a limit's edge, a large value) in place of one number of the
 * header.  That lets the fuzzer reach the loader with any shapes, names,
 * layer indices and metadata.  The third time it mutates the raw bytes,
 * which keeps the reader's own checks in play.
 *
 * Build and run: fuzz/run-fuzzers.sh (see docs/fuzzing.md).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>
#include <unistd.h>

#include "safetensors.h"
#include "weights.h"

int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);
size_t LLVMFuzzerMutate (uint8_t * data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator (uint8_t * data, size_t size, size_t max_size,
    unsigned int seed);

static volatile float sink;

#define CHECK(cond) do { if (!(cond)) __builtin_trap (); } while (0)

/* ------------------------------------------------------------------ */
/* Allocation bound for the loader                                     */

#define ALLOC_FACTOR 8
#define ALLOC_SLACK (1u << 20)

static int counting;            /* inside avf_weights_from_safetensors */
static size_t alloc_total, alloc_limit;

static void
put_str (char *buf, size_t cap, size_t * pos, const char *s)
{
  while (*s && *pos + 1 < cap)
    buf[(*pos)++] = *s++;
}

static void
put_num (char *buf, size_t cap, size_t * pos, uint64_t v)
{
  char tmp[24];
  int n = 0;

  do {
    tmp[n++] = (char) ('0' + v % 10);
    v /= 10;
  } while (v);
  while (n > 0 && *pos + 1 < cap)
    buf[(*pos)++] = tmp[--n];
}

/* Runs inside malloc: no allocation, no stdio. */
static void
malloc_hook (const volatile void *ptr, size_t size)
{
  char msg[256];
  size_t pos = 0;

  (void) ptr;
  if (!counting)
    return;
  alloc_total += size;
  if (alloc_total <= alloc_limit)
    return;
  counting = 0;
  put_str (msg, sizeof msg, &pos, "fuzz_weights: the loader allocated ");
  put_num (msg, sizeof msg, &pos, alloc_total);
  put_str (msg, sizeof msg, &pos, " bytes in all (this one: ");
  put_num (msg, sizeof msg, &pos, size);
  put_str (msg, sizeof msg, &pos, ") for a file whose limit is ");
  put_num (msg, sizeof msg, &pos, alloc_limit);
  put_str (msg, sizeof msg, &pos, " bytes\n");
  if (write (2, msg, pos) < 0)
    pos = 0;
  __builtin_trap ();
}

/* The sanitizer runtime installs hooks only in pairs. */
static void
free_hook (const volatile void *ptr)
{
  (void) ptr;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  if (__sanitizer_install_malloc_and_free_hooks (malloc_hook, free_hook) == 0)
    abort ();                   /* the allocation bound would not be checked */
  return 0;
}

static void
check_failure (AvfStatus status, const AvfWeights * w, const AvfError * err)
{
  size_t len;

  CHECK (w == NULL);
  CHECK (err->status == status);
  CHECK (status == AVF_ERR_FORMAT || status == AVF_ERR_SHAPE
      || status == AVF_ERR_NOMEM);
  len = strnlen (err->message, sizeof err->message);
  CHECK (len > 0 && len < sizeof err->message);
}

static void
check_config (const AvfConfig * c)
{
  AvfError err;

  CHECK (c->E > 0 && c->H > 0 && c->L > 0 && c->F > 0);
  CHECK (c->M > 0 && c->P > 0 && c->N > 0 && c->T_max > 0);
  CHECK (c->E % c->H == 0);
  CHECK (c->sample_rate >= 0 && c->n_fft >= 0 && c->hop_length >= 0
      && c->window_ms >= 0);
  avf_error_clear (&err);
  CHECK (avf_config_check (c, &err) == AVF_OK);
}

/* Every named field of the struct is set. */
static void
check_pointers (const AvfWeights * w)
{
  int i, m, k;

  CHECK (w->audio_proj_weight && w->audio_proj_bias && w->audio_pos);
  CHECK (w->patch_embed_weight && w->patch_embed_bias && w->video_pos);
  CHECK (w->layers != NULL);
  for (i = 0; i < w->cfg.L; i++) {
    const AvfLayerWeights *l = &w->layers[i];
    for (m = 0; m < AVF_N_MODULES; m++)
      CHECK (l->mha[m].in_proj_weight && l->mha[m].in_proj_bias
          && l->mha[m].out_proj_weight && l->mha[m].out_proj_bias);
    for (k = 0; k < 3; k++)
      CHECK (l->audio_norm[k].weight && l->audio_norm[k].bias
          && l->video_norm[k].weight && l->video_norm[k].bias);
    CHECK (l->audio_ffn.w1 && l->audio_ffn.b1 && l->audio_ffn.w2
        && l->audio_ffn.b2);
    CHECK (l->video_ffn.w1 && l->video_ffn.b1 && l->video_ffn.w2
        && l->video_ffn.b2);
  }
  /* avfusion-v2's rhythm tensors, all or none */
  if (w->rhythm.D > 0) {
    AvfError err;
    avf_error_clear (&err);
    CHECK (avf_rhythm_config_check (&w->rhythm, &w->cfg, &err) == AVF_OK);
    CHECK (w->rhythm_embed_weight && w->rhythm_embed_bias
        && w->audio_rhythm_weight && w->audio_rhythm_bias
        && w->rhythm_bin_weight && w->rhythm_proj_weight);
  } else {
    CHECK (!w->rhythm_embed_weight && !w->rhythm_proj_weight);
  }
}

/* The canonical tensor list is exactly the file's tensor set, and each
 * loaded tensor holds the file's values. */
static void
check_tensors (const AvfWeights * w, const AvfSafetensors * st)
{
  size_t n = avf_weights_n_tensors (w), i;
  float sum = 0.0f;

  CHECK (n == avf_safetensors_count (st));
  for (i = 0; i < n; i++) {
    AvfWeightTensor wt;
    const AvfTensorInfo *t;
    uint64_t numel = 1, k;
    int d;

    CHECK (avf_weights_tensor (w, i, &wt));
    CHECK (wt.data != NULL);
    CHECK (wt.ndim >= 1 && wt.ndim <= 4);
    for (d = 0; d < wt.ndim; d++)
      numel *= wt.shape[d];
    CHECK (numel == wt.numel);
    t = avf_safetensors_find (st, wt.name);
    CHECK (t != NULL);
    CHECK (t->dtype == AVF_DTYPE_F32);
    CHECK (t->ndim == wt.ndim && t->numel == wt.numel);
    for (d = 0; d < wt.ndim; d++)
      CHECK (t->shape[d] == wt.shape[d]);
    CHECK (memcmp (wt.data, t->data, (size_t) numel * sizeof (float)) == 0);
    for (k = 0; k < numel; k++) {
      CHECK (isfinite (wt.data[k]));
      sum += wt.data[k];
    }
  }
  {
    AvfWeightTensor past;
    CHECK (!avf_weights_tensor (w, n, &past));
  }
  sink = sum;
}

/* ------------------------------------------------------------------ */
/* Custom mutator: mutate the header, then repair offsets and lengths   */

#define MAX_REPAIRED 4096       /* tensors whose offsets are rewritten */

typedef struct {
  size_t start, end;            /* the data_offsets value in the header */
  uint64_t nbytes;              /* shape x dtype size */
} OffsetsSpan;

static int
is_space (uint8_t c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t
skip_space (const uint8_t * h, size_t n, size_t i)
{
  while (i < n && is_space (h[i]))
    i++;
  return i;
}

/* *i is on a '"'; moves it past the closing quote.  0 when unterminated. */
static int
skip_string (const uint8_t * h, size_t n, size_t * i)
{
  size_t k = *i + 1;

  while (k < n) {
    if (h[k] == '\\') {
      k += 2;
      continue;
    }
    if (h[k] == '"') {
      *i = k + 1;
      return 1;
    }
    k++;
  }
  return 0;
}

/* Moves *i past one value of any kind (brackets matched, strings skipped). */
static int
skip_value (const uint8_t * h, size_t n, size_t * i)
{
  size_t k = skip_space (h, n, *i);
  int depth = 0;

  if (k >= n)
    return 0;
  if (h[k] == '"') {
    *i = k;
    return skip_string (h, n, i);
  }
  if (h[k] != '{' && h[k] != '[') {
    while (k < n && h[k] != ',' && h[k] != '}' && h[k] != ']'
        && !is_space (h[k]))
      k++;
    *i = k;
    return 1;
  }
  while (k < n) {
    if (h[k] == '"') {
      if (!skip_string (h, n, &k))
        return 0;
      continue;
    }
    if (h[k] == '{' || h[k] == '[') {
      depth++;
    } else if (h[k] == '}' || h[k] == ']') {
      if (--depth == 0) {
        *i = k + 1;
        return 1;
      }
    }
    k++;
  }
  return 0;
}

/* A key at *i (on '"') equal to word, then ':'; *i ends after the ':'. */
static int
read_key (const uint8_t * h, size_t n, size_t * i, const uint8_t ** key,
    size_t * key_len)
{
  size_t start = *i;

  if (start >= n || h[start] != '"' || !skip_string (h, n, i))
    return 0;
  *key = h + start + 1;
  *key_len = *i - start - 2;
  *i = skip_space (h, n, *i);
  if (*i >= n || h[*i] != ':')
    return 0;
  *i = skip_space (h, n, *i + 1);
  return 1;
}

static int
key_is (const uint8_t * key, size_t len, const char *word)
{
  return len == strlen (word) && memcmp (key, word, len) == 0;
}

/* The dtype string at *i (on '"'); element size, 1 when unknown. */
static uint64_t
read_dtype_size (const uint8_t * h, size_t n, size_t i)
{
  static const AvfDtype all[] = {
    AVF_DTYPE_BOOL, AVF_DTYPE_U8, AVF_DTYPE_I8, AVF_DTYPE_F8_E5M2,
    AVF_DTYPE_F8_E4M3, AVF_DTYPE_I16, AVF_DTYPE_U16, AVF_DTYPE_F16,
    AVF_DTYPE_BF16, AVF_DTYPE_I32, AVF_DTYPE_U32, AVF_DTYPE_F32,
    AVF_DTYPE_F64, AVF_DTYPE_I64, AVF_DTYPE_U64
  };
  size_t end = i, k;

  if (!skip_string (h, n, &end))
    return 1;
  for (k = 0; k < sizeof all / sizeof all[0]; k++)
    if (key_is (h + i + 1, end - i - 2, avf_dtype_name (all[k])))
      return avf_dtype_size (all[k]);
  return 1;
}

/* The element count of the shape array at i (on '['); 0 on a bad array,
 * UINT64_MAX when it does not fit. */
static uint64_t
read_numel (const uint8_t * h, size_t n, size_t i)
{
  uint64_t numel = 1, v = 0;
  int digits = 0;

  for (i++; i < n; i++) {
    uint8_t c = h[i];
    if (c >= '0' && c <= '9') {
      if (v > (UINT64_MAX - 9) / 10)
        return UINT64_MAX;
      v = v * 10 + (uint64_t) (c - '0');
      digits = 1;
    } else if (c == ',' || c == ']') {
      if (digits && !avf_size_mul (&numel, numel, v))
        return UINT64_MAX;
      v = 0;
      digits = 0;
      if (c == ']')
        return numel;
    } else if (!is_space (c)) {
      return 0;
    }
  }
  return 0;
}

/* Finds the data_offsets of every tensor object of the header in order.
 * Returns the number found. */
static size_t
find_offsets (const uint8_t * h, size_t n, OffsetsSpan * spans)
{
  size_t i = skip_space (h, n, 0), count = 0;

  if (i >= n || h[i] != '{')
    return 0;
  i++;
  while (count < MAX_REPAIRED) {
    const uint8_t *key;
    size_t key_len;
    uint64_t numel = 1, esize = 1;
    int have = 0;

    i = skip_space (h, n, i);
    if (i < n && h[i] == ',')
      i = skip_space (h, n, i + 1);
    if (!read_key (h, n, &i, &key, &key_len))
      break;
    if (i >= n || h[i] != '{' || key_is (key, key_len, "__metadata__")) {
      if (!skip_value (h, n, &i))
        break;
      continue;
    }
    /* a tensor object */
    i++;
    for (;;) {
      i = skip_space (h, n, i);
      if (i < n && h[i] == ',')
        i = skip_space (h, n, i + 1);
      if (i < n && h[i] == '}') {
        i++;
        break;
      }
      if (!read_key (h, n, &i, &key, &key_len))
        return count;
      if (i < n && key_is (key, key_len, "dtype") && h[i] == '"') {
        esize = read_dtype_size (h, n, i);
      } else if (i < n && key_is (key, key_len, "shape") && h[i] == '[') {
        numel = read_numel (h, n, i);
      } else if (i < n && key_is (key, key_len, "data_offsets")) {
        spans[count].start = i;
        have = 1;
      }
      if (!skip_value (h, n, &i))
        return count;
      if (have == 1) {
        spans[count].end = i;
        have = 2;
      }
    }
    if (have == 2) {
      if (!avf_size_mul (&spans[count].nbytes, numel, esize))
        spans[count].nbytes = UINT64_MAX;
      count++;
    }
  }
  return count;
}

/* Writes [length][header with rewritten offsets][data] into out (capacity
 * cap).  old_data is the previous data area.  Returns the size, or 0. */
static size_t
repair (uint8_t * out, size_t cap, const uint8_t * h, size_t n,
    const uint8_t * old_data, size_t old_len)
{
  static OffsetsSpan spans[MAX_REPAIRED];
  size_t count = find_offsets (h, n, spans), k, pos = 8, from = 0;
  uint64_t offset = 0, hlen;

  for (k = 0; k < count; k++) {
    char num[48];
    int len;
    uint64_t end;

    if (!avf_size_add (&end, offset, spans[k].nbytes) || end > cap)
      return 0;
    if (spans[k].start - from > cap - pos)
      return 0;
    memcpy (out + pos, h + from, spans[k].start - from);
    pos += spans[k].start - from;
    len = snprintf (num, sizeof num, "[%llu,%llu]",
        (unsigned long long) offset, (unsigned long long) end);
    if (len < 0 || (size_t) len > cap - pos)
      return 0;
    memcpy (out + pos, num, (size_t) len);
    pos += (size_t) len;
    from = spans[k].end;
    offset = end;
  }
  if (n - from > cap - pos)
    return 0;
  memcpy (out + pos, h + from, n - from);
  pos += n - from;
  hlen = pos - 8;
  if (hlen == 0 || offset > cap - pos)
    return 0;
  for (k = 0; k < 8; k++)
    out[k] = (uint8_t) (hlen >> (8 * k));
  if (offset <= old_len) {
    memcpy (out + pos, old_data, (size_t) offset);
  } else {
    memcpy (out + pos, old_data, old_len);
    memset (out + pos + old_len, 0, (size_t) offset - old_len);
  }
  return pos + (size_t) offset;
}

/* Replaces one decimal number of the header (a shape, a layer index, a
 * metadata value, ...) with a size the loader has to judge: edges of its
 * limits and large values.  Returns the new length, or 0. */
static size_t
rewrite_number (uint8_t * h, size_t n, size_t cap, uint32_t r)
{
  static const uint64_t values[] = {
    0, 1, 2, 3, 4, 7, 8, 9, 16, 63, 64, 65, 100, 256, 1000, 1024, 2048,
    4096, 65535, 65536, 65537, 1000000, 4294967296ull,
  };
  size_t count = 0, pick, i, start = 0, end, old_len, new_len;
  char num[24];
  uint64_t v;

  for (i = 0; i < n; i++)
    if (h[i] >= '0' && h[i] <= '9' && (i == 0 || h[i - 1] < '0'
            || h[i - 1] > '9'))
      count++;
  if (count == 0)
    return 0;
  pick = r % count;
  r /= (uint32_t) count;
  for (i = 0; i < n; i++) {
    if (h[i] >= '0' && h[i] <= '9' && (i == 0 || h[i - 1] < '0'
            || h[i - 1] > '9')) {
      if (pick-- == 0) {
        start = i;
        break;
      }
    }
  }
  end = start;
  while (end < n && h[end] >= '0' && h[end] <= '9')
    end++;
  if (r % 4 == 0)
    v = 1 + r / 4 % 5000;       /* any moderate size */
  else
    v = values[r / 4 % (sizeof values / sizeof values[0])];
  new_len = (size_t) snprintf (num, sizeof num, "%llu", (unsigned long long) v);
  old_len = end - start;
  if (n - old_len + new_len > cap)
    return 0;
  memmove (h + start + new_len, h + end, n - end);
  memcpy (h + start, num, new_len);
  return n - old_len + new_len;
}

size_t
LLVMFuzzerCustomMutator (uint8_t * data, size_t size, size_t max_size,
    unsigned int seed)
{
  uint64_t n = 0;
  size_t k, hn, got;
  uint8_t *header, *out;
  uint32_t r = seed * 2654435761u;

  if (size >= 8) {
    for (k = 0; k < 8; k++)
      n |= (uint64_t) data[k] << (8 * k);
  }
  /* one time in three, or when there is no header to work on: raw bytes */
  if (seed % 3 == 0 || size < 8 || n == 0 || n > size - 8 || max_size <= 8)
    return LLVMFuzzerMutate (data, size, max_size);

  header = malloc (max_size);
  out = malloc (max_size);
  if (header == NULL || out == NULL) {
    free (header);
    free (out);
    return LLVMFuzzerMutate (data, size, max_size);
  }
  memcpy (header, data + 8, (size_t) n);
  /* the header: a new size for one number, or libFuzzer's own mutations */
  hn = 0;
  if (seed % 3 == 1)
    hn = rewrite_number (header, (size_t) n, max_size - 8, r);
  if (hn == 0)
    hn = LLVMFuzzerMutate (header, (size_t) n, max_size - 8);
  got = repair (out, max_size, header, hn, data + 8 + n, size - 8 - n);
  if (got > 0)
    memcpy (data, out, got);
  free (header);
  free (out);
  return got > 0 ? got : LLVMFuzzerMutate (data, size, max_size);
}

/* ------------------------------------------------------------------ */

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  AvfSafetensors *st = NULL;
  AvfWeights *w = NULL;
  AvfError err;
  AvfStatus status;

  avf_error_clear (&err);
  if (avf_safetensors_parse (&st, data, size, &err) != AVF_OK)
    return 0;

  avf_error_clear (&err);
  alloc_total = 0;
  alloc_limit = ALLOC_FACTOR * size + ALLOC_SLACK;
  counting = 1;
  status = avf_weights_from_safetensors (&w, st, &err);
  counting = 0;
  if (status != AVF_OK) {
    check_failure (status, w, &err);
    avf_safetensors_free (st);
    return 0;
  }
  CHECK (w != NULL);
  check_config (&w->cfg);
  check_pointers (w);
  check_tensors (w, st);
  avf_weights_free (w);
  avf_safetensors_free (st);
  return 0;
}
