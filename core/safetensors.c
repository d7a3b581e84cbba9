/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * safetensors: strict reader.
 * ref: huggingface safetensors, safetensors/src/tensor.rs
 *      (SafeTensors::read_metadata, Metadata::validate, prepare).
 *
 * The reader works on a whole file image in four steps:
 *   1. header length bounds (8-byte little-endian N, 0 < N <= 100 MB,
 *      8 + N within the file);
 *   2. the header is valid UTF-8 and starts with '{';
 *   3. a generic, allocation-free, depth-limited JSON syntax check of the
 *      whole header, then a typed walk that fills the tensor and metadata
 *      tables (strings are decoded into one pool of N + 1 bytes);
 *   4. duplicate names, then the tensors sorted by data offset must cover
 *      the data area exactly, from 0 to the end of the file.
 * Only after all checks pass is the image copied (once); tensor data
 * pointers point into that copy.  The UTF-8 check, the JSON lexer and the
 * syntax check (steps 2 and 3a) are in json_lex.c.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "safetensors.h"
#include "json_lex.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

typedef struct {
  const char *name;
  size_t size;
} DtypeDesc;

static const DtypeDesc dtype_table[] = {
  [AVF_DTYPE_BOOL] = {"BOOL", 1},
  [AVF_DTYPE_U8] = {"U8", 1},
  [AVF_DTYPE_I8] = {"I8", 1},
  [AVF_DTYPE_F8_E5M2] = {"F8_E5M2", 1},
  [AVF_DTYPE_F8_E4M3] = {"F8_E4M3", 1},
  [AVF_DTYPE_I16] = {"I16", 2},
  [AVF_DTYPE_U16] = {"U16", 2},
  [AVF_DTYPE_F16] = {"F16", 2},
  [AVF_DTYPE_BF16] = {"BF16", 2},
  [AVF_DTYPE_I32] = {"I32", 4},
  [AVF_DTYPE_U32] = {"U32", 4},
  [AVF_DTYPE_F32] = {"F32", 4},
  [AVF_DTYPE_F64] = {"F64", 8},
  [AVF_DTYPE_I64] = {"I64", 8},
  [AVF_DTYPE_U64] = {"U64", 8},
};

#define N_DTYPES (sizeof dtype_table / sizeof dtype_table[0])

typedef struct {
  AvfTensorInfo info;
  int64_t key_pos;              /* file offset of the tensor's name */
} TensorRec;

typedef struct {
  AvfMetadataEntry entry;
  int64_t key_pos;              /* file offset of the key */
} MetaRec;

struct AvfSafetensors {
  uint8_t *bytes;               /* the whole file image */
  size_t len;
  char *strings;                /* decoded names, keys and values */
  TensorRec *tensors;           /* sorted by data offset */
  size_t n_tensors;
  const TensorRec **by_name;    /* sorted by name, for find */
  MetaRec *metadata;            /* in file order */
  size_t n_metadata;
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

const char *
avf_dtype_name (AvfDtype dtype)
{
  if ((unsigned) dtype >= N_DTYPES)
    return "invalid";
  return dtype_table[dtype].name;
}

size_t
avf_dtype_size (AvfDtype dtype)
{
  if ((unsigned) dtype >= N_DTYPES)
    return 0;
  return dtype_table[dtype].size;
}

static AvfStatus
fail_nomem (AvfError * err)
{
  return avf_error_set (err, AVF_ERR_NOMEM, -1,
      "out of memory while reading a safetensors file");
}

static int
grow_array (void **arr, size_t * cap, size_t need, size_t elem)
{
  size_t new_cap;
  uint64_t bytes;
  void *p;

  if (need <= *cap)
    return 1;
  new_cap = *cap ? *cap : 16;
  while (new_cap < need) {
    if (new_cap > SIZE_MAX / 2)
      return 0;
    new_cap *= 2;
  }
  if (!avf_size_mul (&bytes, new_cap, elem) || bytes > SIZE_MAX)
    return 0;
  p = realloc (*arr, (size_t) bytes);
  if (p == NULL)
    return 0;
  *arr = p;
  *cap = new_cap;
  return 1;
}

/* ------------------------------------------------------------------ */
/* Step 3b: typed walk over the (syntactically valid) header            */

typedef struct {
  Json j;
  TensorRec *tensors;
  size_t n_tensors, cap_tensors;
  MetaRec *meta;
  size_t n_meta, cap_meta;
  int seen_metadata;
} Walk;

/* Decodes the string at the cursor into the pool.  keep == 0 leaves the
 * pool top unchanged, so the next string overwrites it. */
static AvfStatus
walk_string (Walk * w, int keep, const char **out, size_t * len)
{
  Json *j = &w->j;
  char *dst = j->pool + j->pool_used;
  AvfStatus st;

  st = avf_json_string (j, dst, j->pool_size - j->pool_used, len);
  if (st != AVF_OK)
    return st;
  if (keep)
    j->pool_used += *len + 1;
  *out = dst;
  return AVF_OK;
}

/* After a member: ',' continues (returns 1), '}' or ']' ends (returns 0). */
static AvfStatus
walk_next (Walk * w, uint8_t close, int *more)
{
  Json *j = &w->j;
  char b[8];

  avf_json_skip_ws (j);
  if (j->pos < j->n && j->s[j->pos] == ',') {
    j->pos++;
    *more = 1;
    return AVF_OK;
  }
  if (j->pos < j->n && j->s[j->pos] == close) {
    j->pos++;
    *more = 0;
    return AVF_OK;
  }
  if (j->pos >= j->n)
    return JFAIL (j, j->n, "unexpected end of the header");
  return JFAIL (j, j->pos, "expected ',' or '%c', found %s", close,
      avf_show_byte (b, j->s[j->pos]));
}

/* Opens an object or array at the cursor; *empty when it closes at once. */
static void
walk_open (Walk * w, uint8_t close, int *empty)
{
  Json *j = &w->j;

  j->pos++;
  avf_json_skip_ws (j);
  *empty = avf_json_peek (j) == close;
  if (*empty)
    j->pos++;
}

static AvfStatus
walk_metadata (Walk * w)
{
  Json *j = &w->j;
  ShownName sn;
  AvfStatus st;
  int empty, more = 1;

  avf_json_skip_ws (j);
  if (avf_json_peek (j) != '{')
    return JFAIL (j, j->pos, "\"__metadata__\" is not a JSON object");
  walk_open (w, '}', &empty);
  if (empty)
    return AVF_OK;
  while (more) {
    const char *key, *value;
    size_t key_len, value_len, key_pos, value_pos;
    MetaRec *m;

    avf_json_skip_ws (j);
    key_pos = j->pos;
    if ((st = walk_string (w, 1, &key, &key_len)) != AVF_OK)
      return st;
    if (strlen (key) != key_len)
      return JFAIL (j, key_pos, "metadata key \"%s\" contains a NUL "
          "character", avf_show_name (&sn, key));
    if ((st = avf_json_expect (j, ':', "':'")) != AVF_OK)
      return st;
    avf_json_skip_ws (j);
    value_pos = j->pos;
    if (avf_json_peek (j) != '"')
      return JFAIL (j, value_pos, "metadata key \"%s\" has a value that is "
          "not a string", avf_show_name (&sn, key));
    if ((st = walk_string (w, 1, &value, &value_len)) != AVF_OK)
      return st;
    if (strlen (value) != value_len)
      return JFAIL (j, value_pos, "metadata value of key \"%s\" contains a "
          "NUL character", avf_show_name (&sn, key));
    if (!grow_array ((void **) &w->meta, &w->cap_meta, w->n_meta + 1,
            sizeof *w->meta))
      return fail_nomem (j->err);
    m = &w->meta[w->n_meta++];
    m->entry.key = key;
    m->entry.value = value;
    m->key_pos = file_off (key_pos);
    if ((st = walk_next (w, '}', &more)) != AVF_OK)
      return st;
  }
  return AVF_OK;
}

static AvfStatus
walk_dtype (Walk * w, const char *shown, AvfDtype * dtype)
{
  Json *j = &w->j;
  ShownName sn;
  const char *s;
  size_t len, pos, i;
  AvfStatus st;

  avf_json_skip_ws (j);
  pos = j->pos;
  if (avf_json_peek (j) != '"')
    return JFAIL (j, pos, "tensor \"%s\" has a \"dtype\" that is not a "
        "string", shown);
  if ((st = walk_string (w, 0, &s, &len)) != AVF_OK)
    return st;
  for (i = 0; i < N_DTYPES; i++) {
    if (strlen (dtype_table[i].name) == len
        && memcmp (dtype_table[i].name, s, len) == 0) {
      *dtype = (AvfDtype) i;
      return AVF_OK;
    }
  }
  return JFAIL (j, pos, "tensor \"%s\" has an unknown dtype \"%s\"", shown,
      strlen (s) == len ? avf_show_name (&sn, s) : "(contains NUL)");
}

/* An array of at most max non-negative integer literals that fit uint64. */
static AvfStatus
walk_uints (Walk * w, const char *shown, const char *field, uint64_t * vals,
    int max, int *count)
{
  Json *j = &w->j;
  AvfStatus st;
  int empty, more = 1, n = 0;

  avf_json_skip_ws (j);
  if (avf_json_peek (j) != '[')
    return JFAIL (j, j->pos, "tensor \"%s\" has a \"%s\" that is not an "
        "array", shown, field);
  walk_open (w, ']', &empty);
  while (!empty && more) {
    NumTok tok;
    uint64_t v = 0;
    size_t p;
    int c;

    avf_json_skip_ws (j);
    c = avf_json_peek (j);
    if (c != '-' && (c < 0 || !is_digit ((uint8_t) c)))
      return JFAIL (j, j->pos, "tensor \"%s\" has a value in \"%s\" that "
          "is not a number", shown, field);
    if (n >= max) {
      if (max == AVF_SAFETENSORS_MAX_DIMS)
        return JFAIL (j, j->pos, "tensor \"%s\" has more than %d dimensions "
            "in \"%s\"", shown, max, field);
      return JFAIL (j, j->pos, "tensor \"%s\" has more than %d values in "
          "\"%s\"", shown, max, field);
    }
    if ((st = avf_json_number (j, &tok)) != AVF_OK)
      return st;
    if (tok.negative)
      return JFAIL (j, tok.start, "tensor \"%s\" has a negative number in "
          "\"%s\"", shown, field);
    if (!tok.integer)
      return JFAIL (j, tok.start, "tensor \"%s\" has a non-integer number in "
          "\"%s\"", shown, field);
    for (p = tok.start; p < tok.end; p++) {
      uint64_t d = (uint64_t) (j->s[p] - '0');
      if (v > (UINT64_MAX - d) / 10)
        return JFAIL (j, tok.start, "tensor \"%s\" has a number in \"%s\" "
            "that does not fit in 64 bits", shown, field);
      v = v * 10 + d;
    }
    vals[n++] = v;
    if ((st = walk_next (w, ']', &more)) != AVF_OK)
      return st;
  }
  *count = n;
  return AVF_OK;
}

static AvfStatus
walk_tensor (Walk * w, const char *name, size_t key_pos)
{
  Json *j = &w->j;
  ShownName sn;
  const char *shown = avf_show_name (&sn, name);
  AvfTensorInfo *t;
  uint64_t offsets[2] = { 0, 0 }, numel = 1, nbytes;
  size_t entry_pos, offsets_pos = 0;
  int have_dtype = 0, have_shape = 0, have_offsets = 0;
  int empty, more = 1, n = 0, i;
  AvfStatus st;

  if (!grow_array ((void **) &w->tensors, &w->cap_tensors, w->n_tensors + 1,
          sizeof *w->tensors))
    return fail_nomem (j->err);
  memset (&w->tensors[w->n_tensors], 0, sizeof w->tensors[0]);
  w->tensors[w->n_tensors].key_pos = file_off (key_pos);
  t = &w->tensors[w->n_tensors].info;
  t->name = name;

  avf_json_skip_ws (j);
  entry_pos = j->pos;
  if (avf_json_peek (j) != '{')
    return JFAIL (j, entry_pos, "tensor \"%s\" is not described by a JSON "
        "object", shown);
  walk_open (w, '}', &empty);
  while (!empty && more) {
    ShownName fsn;
    const char *field;
    size_t field_len, field_pos;

    avf_json_skip_ws (j);
    field_pos = j->pos;
    if ((st = walk_string (w, 0, &field, &field_len)) != AVF_OK)
      return st;
    if ((st = avf_json_expect (j, ':', "':'")) != AVF_OK)
      return st;
    if (field_len == 5 && memcmp (field, "dtype", 5) == 0) {
      if (have_dtype)
        return JFAIL (j, field_pos, "tensor \"%s\" has a duplicate key "
            "\"dtype\"", shown);
      have_dtype = 1;
      st = walk_dtype (w, shown, &t->dtype);
    } else if (field_len == 5 && memcmp (field, "shape", 5) == 0) {
      if (have_shape)
        return JFAIL (j, field_pos, "tensor \"%s\" has a duplicate key "
            "\"shape\"", shown);
      have_shape = 1;
      st = walk_uints (w, shown, "shape", t->shape, AVF_SAFETENSORS_MAX_DIMS,
          &t->ndim);
    } else if (field_len == 12 && memcmp (field, "data_offsets", 12) == 0) {
      if (have_offsets)
        return JFAIL (j, field_pos, "tensor \"%s\" has a duplicate key "
            "\"data_offsets\"", shown);
      have_offsets = 1;
      avf_json_skip_ws (j);
      offsets_pos = j->pos;
      st = walk_uints (w, shown, "data_offsets", offsets, 2, &n);
      if (st == AVF_OK && n != 2)
        return JFAIL (j, offsets_pos, "tensor \"%s\" has %d value%s in "
            "\"data_offsets\" instead of 2", shown, n, n == 1 ? "" : "s");
    } else {
      return JFAIL (j, field_pos, "tensor \"%s\" has an unexpected field "
          "\"%s\"", shown, strlen (field) == field_len ?
          avf_show_name (&fsn, field) : "(contains NUL)");
    }
    if (st != AVF_OK)
      return st;
    if ((st = walk_next (w, '}', &more)) != AVF_OK)
      return st;
  }
  if (!have_dtype)
    return JFAIL (j, entry_pos, "tensor \"%s\" has no \"dtype\" field",
        shown);
  if (!have_shape)
    return JFAIL (j, entry_pos, "tensor \"%s\" has no \"shape\" field",
        shown);
  if (!have_offsets)
    return JFAIL (j, entry_pos, "tensor \"%s\" has no \"data_offsets\" "
        "field", shown);

  for (i = 0; i < t->ndim; i++)
    if (!avf_size_mul (&numel, numel, t->shape[i]))
      return JFAIL (j, entry_pos, "tensor \"%s\" has more elements than fit "
          "in 64 bits", shown);
  if (!avf_size_mul (&nbytes, numel, dtype_table[t->dtype].size))
    return JFAIL (j, entry_pos, "tensor \"%s\" (%" PRIu64 " elements of %s) "
        "has a byte size that does not fit in 64 bits", shown, numel,
        dtype_table[t->dtype].name);
  t->numel = numel;
  t->begin = offsets[0];
  t->end = offsets[1];
  if (t->begin > t->end)
    return JFAIL (j, offsets_pos, "tensor \"%s\" has data_offsets [%" PRIu64
        ", %" PRIu64 "] whose begin is after its end", shown, t->begin,
        t->end);
  if (t->end - t->begin != nbytes)
    return JFAIL (j, offsets_pos, "tensor \"%s\" needs %" PRIu64 " bytes (%"
        PRIu64 " elements of %s) but its data_offsets [%" PRIu64 ", %" PRIu64
        "] span %" PRIu64 " bytes", shown, nbytes, numel,
        dtype_table[t->dtype].name, t->begin, t->end, t->end - t->begin);
  w->n_tensors++;
  return AVF_OK;
}

static AvfStatus
walk_root (Walk * w)
{
  Json *j = &w->j;
  AvfStatus st;
  int empty, more = 1;

  j->pos = 0;
  avf_json_skip_ws (j);
  if (avf_json_peek (j) != '{')
    return JFAIL (j, j->pos, "header is not a JSON object");
  walk_open (w, '}', &empty);
  while (!empty && more) {
    ShownName sn;
    const char *key;
    size_t key_len, key_pos;

    avf_json_skip_ws (j);
    key_pos = j->pos;
    if ((st = walk_string (w, 1, &key, &key_len)) != AVF_OK)
      return st;
    if ((st = avf_json_expect (j, ':', "':'")) != AVF_OK)
      return st;
    if (key_len == 12 && memcmp (key, "__metadata__", 12) == 0) {
      if (w->seen_metadata)
        return JFAIL (j, key_pos, "duplicate key \"__metadata__\"");
      w->seen_metadata = 1;
      st = walk_metadata (w);
    } else if (strlen (key) != key_len) {
      return JFAIL (j, key_pos, "tensor name \"%s\" contains a NUL "
          "character", avf_show_name (&sn, key));
    } else {
      st = walk_tensor (w, key, key_pos);
    }
    if (st != AVF_OK)
      return st;
    if ((st = walk_next (w, '}', &more)) != AVF_OK)
      return st;
  }
  return AVF_OK;
}

/* ------------------------------------------------------------------ */
/* Step 4: names and offsets                                           */

static int
cmp_by_offset (const void *a, const void *b)
{
  const TensorRec *x = a, *y = b;
  int c;

  if (x->info.begin != y->info.begin)
    return x->info.begin < y->info.begin ? -1 : 1;
  if (x->info.end != y->info.end)
    return x->info.end < y->info.end ? -1 : 1;
  c = strcmp (x->info.name, y->info.name);
  if (c != 0)
    return c;
  return x->key_pos < y->key_pos ? -1 : x->key_pos > y->key_pos;
}

static int
cmp_tensor_names (const void *a, const void *b)
{
  const TensorRec *x = *(const TensorRec * const *) a;
  const TensorRec *y = *(const TensorRec * const *) b;
  int c = strcmp (x->info.name, y->info.name);

  if (c != 0)
    return c;
  return x->key_pos < y->key_pos ? -1 : x->key_pos > y->key_pos;
}

static int
cmp_meta_keys (const void *a, const void *b)
{
  const MetaRec *x = *(const MetaRec * const *) a;
  const MetaRec *y = *(const MetaRec * const *) b;
  int c = strcmp (x->entry.key, y->entry.key);

  if (c != 0)
    return c;
  return x->key_pos < y->key_pos ? -1 : x->key_pos > y->key_pos;
}

static AvfStatus
check_metadata_keys (const Walk * w, AvfError * err)
{
  const MetaRec **sorted;
  AvfStatus st = AVF_OK;
  size_t i;

  if (w->n_meta < 2)
    return AVF_OK;
  sorted = malloc (w->n_meta * sizeof *sorted);
  if (sorted == NULL)
    return fail_nomem (err);
  for (i = 0; i < w->n_meta; i++)
    sorted[i] = &w->meta[i];
  qsort (sorted, w->n_meta, sizeof *sorted, cmp_meta_keys);
  for (i = 0; i + 1 < w->n_meta; i++) {
    if (strcmp (sorted[i]->entry.key, sorted[i + 1]->entry.key) == 0) {
      ShownName sn;
      st = avf_fail_format (err, sorted[i + 1]->key_pos,
          "duplicate metadata key \"%s\"",
          avf_show_name (&sn, sorted[i + 1]->entry.key));
      break;
    }
  }
  free (sorted);
  return st;
}

/* Sorted by offset, the tensors must tile [0, data_len) exactly. */
static AvfStatus
check_offsets (const TensorRec * t, size_t n, uint64_t data_start,
    uint64_t data_len, AvfError * err)
{
  ShownName a, b;
  uint64_t expect = 0;
  size_t i;

  for (i = 0; i < n; i++) {
    const AvfTensorInfo *cur = &t[i].info;
    if (cur->begin != expect) {
      const AvfTensorInfo *prev = i > 0 ? &t[i - 1].info : NULL;
      if (prev == NULL)
        return avf_fail_format (err, (int64_t) data_start, "the first tensor "
            "\"%s\" starts at data offset %" PRIu64 " instead of 0",
            avf_show_name (&a, cur->name), cur->begin);
      if (cur->begin > expect)
        return avf_fail_format (err, (int64_t) (data_start + expect),
            "gap of %" PRIu64 " bytes between tensor \"%s\" (data offsets [%"
            PRIu64 ", %" PRIu64 "]) and tensor \"%s\" (data offsets [%" PRIu64
            ", %" PRIu64 "])", cur->begin - expect,
            avf_show_name (&a, prev->name), prev->begin, prev->end,
            avf_show_name (&b, cur->name), cur->begin, cur->end);
      return avf_fail_format (err, (int64_t) (data_start + cur->begin),
          "tensor \"%s\" (data offsets [%" PRIu64 ", %" PRIu64 "]) overlaps "
          "tensor \"%s\" (data offsets [%" PRIu64 ", %" PRIu64 "])",
          avf_show_name (&b, cur->name), cur->begin, cur->end,
          avf_show_name (&a, prev->name), prev->begin, prev->end);
    }
    if (cur->end > data_len)
      return avf_fail_format (err, (int64_t) (data_start + data_len),
          "tensor \"%s\" ends at data offset %" PRIu64 ", past the end of "
          "the file (the data area has %" PRIu64 " bytes)",
          avf_show_name (&a, cur->name), cur->end, data_len);
    expect = cur->end;
  }
  if (expect != data_len) {
    if (n == 0)
      return avf_fail_format (err, (int64_t) data_start, "%" PRIu64 " bytes of "
          "data after the header of a file without tensors", data_len);
    return avf_fail_format (err, (int64_t) (data_start + expect), "%" PRIu64
        " bytes of data after the last tensor \"%s\"", data_len - expect,
        avf_show_name (&a, t[n - 1].info.name));
  }
  return AVF_OK;
}

/* ------------------------------------------------------------------ */
/* Reader entry points                                                 */

uint64_t
avf_safetensors_header_length (const uint8_t * p)
{
  uint64_t v = 0;
  int i;

  for (i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Step 1: the 8-byte little-endian header length N of buf[0..len), with
 * 0 < N <= AVF_SAFETENSORS_MAX_HEADER and 8 + N within the file. */
static AvfStatus
check_header_length (const uint8_t * buf, size_t len, uint64_t * out_n,
    AvfError * err)
{
  uint64_t n;

  if (len < HEADER_LEN_BYTES)
    return avf_error_set (err, AVF_ERR_FORMAT, 0, "file is %zu bytes, "
        "shorter than the 8-byte header length", len);
  n = avf_safetensors_header_length (buf);
  if (n == 0)
    return avf_error_set (err, AVF_ERR_FORMAT, 0, "header length is 0");
  if (n > AVF_SAFETENSORS_MAX_HEADER)
    return avf_error_set (err, AVF_ERR_FORMAT, 0, "header length %" PRIu64
        " is larger than the limit of %u bytes", n,
        (unsigned) AVF_SAFETENSORS_MAX_HEADER);
  if (n > len - HEADER_LEN_BYTES)
    return avf_error_set (err, AVF_ERR_FORMAT, 0, "header length %" PRIu64
        " runs past the end of the %zu-byte file", n, len);
  *out_n = n;
  return AVF_OK;
}

/* Steps 2 and 3a: the header j->s[0..j->n) is valid UTF-8, one JSON
 * object and nothing after it but white space. */
static AvfStatus
check_header_syntax (Json * j)
{
  AvfStatus status;
  size_t bad;
  char b[8];

  bad = avf_utf8_check (j->s, j->n);
  if (bad < j->n)
    return JFAIL (j, bad, "header is not valid UTF-8 (byte 0x%02x)",
        j->s[bad]);
  if (j->s[0] != '{')
    return JFAIL (j, 0, "header is not a JSON object: it starts with "
        "%s instead of '{'", avf_show_byte (b, j->s[0]));
  if ((status = avf_json_check_value (j, 1)) != AVF_OK)
    return status;
  avf_json_skip_ws (j);
  if (j->pos != j->n)
    return JFAIL (j, j->pos, "unexpected %s after the JSON object",
        avf_show_byte (b, j->s[j->pos]));
  return AVF_OK;
}

/* Step 4, names: sorts the walked tensors by data offset, fills
 * st->by_name with them sorted by name and rejects duplicate names. */
static AvfStatus
index_tensor_names (AvfSafetensors * st, Walk * w, AvfError * err)
{
  size_t i;

  if (w->n_tensors == 0)
    return AVF_OK;
  qsort (w->tensors, w->n_tensors, sizeof *w->tensors, cmp_by_offset);
  st->by_name = malloc (w->n_tensors * sizeof *st->by_name);
  if (st->by_name == NULL)
    return fail_nomem (err);
  for (i = 0; i < w->n_tensors; i++)
    st->by_name[i] = &w->tensors[i];
  qsort (st->by_name, w->n_tensors, sizeof *st->by_name, cmp_tensor_names);
  for (i = 0; i + 1 < w->n_tensors; i++) {
    if (strcmp (st->by_name[i]->info.name,
            st->by_name[i + 1]->info.name) == 0) {
      ShownName sn;
      return avf_fail_format (err, st->by_name[i + 1]->key_pos,
          "duplicate tensor name \"%s\"",
          avf_show_name (&sn, st->by_name[i + 1]->info.name));
    }
  }
  return AVF_OK;
}

/* Validates the image buf[0..len) and builds the reader.  owned, when not
 * NULL, is buf itself allocated with malloc: it is adopted on success and
 * freed on failure; otherwise buf is copied once everything checked out. */
static AvfStatus
parse_image (AvfSafetensors ** out, const uint8_t * buf, size_t len,
    uint8_t * owned, AvfError * err)
{
  AvfSafetensors *st = NULL;
  Walk w;
  uint64_t n = 0, data_start;
  size_t i;
  AvfStatus status;

  memset (&w, 0, sizeof w);
  w.j.err = err;

  if ((status = check_header_length (buf, len, &n, err)) != AVF_OK)
    goto fail;
  data_start = HEADER_LEN_BYTES + n;

  w.j.s = buf + HEADER_LEN_BYTES;
  w.j.n = (size_t) n;
  if ((status = check_header_syntax (&w.j)) != AVF_OK)
    goto fail;

  w.j.pool_size = w.j.n + 1;
  w.j.pool = malloc (w.j.pool_size);
  if (w.j.pool == NULL) {
    status = fail_nomem (err);
    goto fail;
  }
  if ((status = walk_root (&w)) != AVF_OK)
    goto fail;

  st = calloc (1, sizeof *st);
  if (st == NULL) {
    status = fail_nomem (err);
    goto fail;
  }
  if ((status = index_tensor_names (st, &w, err)) != AVF_OK)
    goto fail;
  if ((status = check_metadata_keys (&w, err)) != AVF_OK)
    goto fail;
  status = check_offsets (w.tensors, w.n_tensors, data_start,
      (uint64_t) len - data_start, err);
  if (status != AVF_OK)
    goto fail;

  if (owned == NULL) {
    owned = malloc (len);
    if (owned == NULL) {
      status = fail_nomem (err);
      goto fail;
    }
    memcpy (owned, buf, len);
  }
  st->bytes = owned;
  st->len = len;
  st->strings = w.j.pool;
  st->tensors = w.tensors;
  st->n_tensors = w.n_tensors;
  st->metadata = w.meta;
  st->n_metadata = w.n_meta;
  for (i = 0; i < w.n_tensors; i++)
    st->tensors[i].info.data = owned + data_start + st->tensors[i].info.begin;
  *out = st;
  return AVF_OK;

fail:
  if (st != NULL) {
    free (st->by_name);
    free (st);
  }
  free (w.j.pool);
  free (w.tensors);
  free (w.meta);
  free (owned);
  return status;
}

AvfStatus
avf_safetensors_parse (AvfSafetensors ** out, const uint8_t * buf,
    size_t len, AvfError * err)
{
  if (out == NULL)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "avf_safetensors_parse needs an output pointer");
  *out = NULL;
  if (buf == NULL && len > 0)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "avf_safetensors_parse got a NULL buffer of %zu bytes", len);
  if (buf == NULL)
    buf = (const uint8_t *) "";
  return parse_image (out, buf, len, NULL, err);
}

AvfStatus
avf_safetensors_open (AvfSafetensors ** out, const char *path,
    AvfError * err)
{
  struct stat sb;
  uint8_t *buf;
  size_t size, got = 0;
  int fd, e;

  if (out == NULL || path == NULL)
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "avf_safetensors_open needs a path and an output pointer");
  *out = NULL;
  fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    e = errno;
    return avf_error_set (err, (e == ENOENT || e == ENOTDIR) ?
        AVF_ERR_NOT_FOUND : AVF_ERR_IO, -1, "cannot open \"%s\": %s", path,
        strerror (e));
  }
  if (fstat (fd, &sb) != 0) {
    e = errno;
    close (fd);
    return avf_error_set (err, AVF_ERR_IO, -1, "cannot stat \"%s\": %s",
        path, strerror (e));
  }
  if (!S_ISREG (sb.st_mode)) {
    close (fd);
    return avf_error_set (err, AVF_ERR_IO, -1, "\"%s\" is not a regular "
        "file", path);
  }
  if (sb.st_size < 0 || (uintmax_t) sb.st_size > SIZE_MAX) {
    close (fd);
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "\"%s\" is too large to "
        "read into memory", path);
  }
  size = (size_t) sb.st_size;
  buf = malloc (size > 0 ? size : 1);
  if (buf == NULL) {
    close (fd);
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory reading "
        "the %zu bytes of \"%s\"", size, path);
  }
  while (got < size) {
    size_t want = size - got;
    ssize_t r = read (fd, buf + got, want > (1u << 30) ? (1u << 30) : want);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      e = errno;
      close (fd);
      free (buf);
      return avf_error_set (err, AVF_ERR_IO, (int64_t) got,
          "cannot read \"%s\": %s", path, strerror (e));
    }
    if (r == 0) {
      close (fd);
      free (buf);
      return avf_error_set (err, AVF_ERR_IO, (int64_t) got, "\"%s\" ended "
          "after %zu of %zu bytes while being read", path, got, size);
    }
    got += (size_t) r;
  }
  close (fd);
  return parse_image (out, buf, size, buf, err);
}

void
avf_safetensors_free (AvfSafetensors * st)
{
  if (st == NULL)
    return;
  free (st->bytes);
  free (st->strings);
  free (st->tensors);
  free (st->by_name);
  free (st->metadata);
  free (st);
}

size_t
avf_safetensors_count (const AvfSafetensors * st)
{
  return st != NULL ? st->n_tensors : 0;
}

const AvfTensorInfo *
avf_safetensors_tensor (const AvfSafetensors * st, size_t i)
{
  if (st == NULL || i >= st->n_tensors)
    return NULL;
  return &st->tensors[i].info;
}

const AvfTensorInfo *
avf_safetensors_find (const AvfSafetensors * st, const char *name)
{
  size_t lo = 0, hi;

  if (st == NULL || name == NULL)
    return NULL;
  hi = st->n_tensors;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp (st->by_name[mid]->info.name, name);
    if (c == 0)
      return &st->by_name[mid]->info;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

size_t
avf_safetensors_metadata_count (const AvfSafetensors * st)
{
  return st != NULL ? st->n_metadata : 0;
}

const AvfMetadataEntry *
avf_safetensors_metadata_entry (const AvfSafetensors * st, size_t i)
{
  if (st == NULL || i >= st->n_metadata)
    return NULL;
  return &st->metadata[i].entry;
}

const char *
avf_safetensors_metadata (const AvfSafetensors * st, const char *key)
{
  size_t i;

  if (st == NULL || key == NULL)
    return NULL;
  for (i = 0; i < st->n_metadata; i++)
    if (strcmp (st->metadata[i].entry.key, key) == 0)
      return st->metadata[i].entry.value;
  return NULL;
}
