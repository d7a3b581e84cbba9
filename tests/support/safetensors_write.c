/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The safetensors writer of the tests (core only reads the format).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "safetensors_write.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  char *p;
  size_t len, cap;
  int failed;
} StrBuf;

static void
sb_put (StrBuf * b, const char *s, size_t n)
{
  if (b->failed)
    return;
  if (n > SIZE_MAX - b->len - 1) {
    b->failed = 1;
    return;
  }
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    char *p;
    while (cap < b->len + n + 1) {
      if (cap > SIZE_MAX / 2) {
        b->failed = 1;
        return;
      }
      cap *= 2;
    }
    p = realloc (b->p, cap);
    if (p == NULL) {
      b->failed = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy (b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void
sb_puts (StrBuf * b, const char *s)
{
  sb_put (b, s, strlen (s));
}

static void
sb_put_u64 (StrBuf * b, uint64_t v)
{
  char tmp[24];
  int n = snprintf (tmp, sizeof tmp, "%" PRIu64, v);
  sb_put (b, tmp, (size_t) n);
}

/* A JSON string literal; s is valid UTF-8 (checked by the caller). */
static void
sb_put_json_string (StrBuf * b, const char *s)
{
  const uint8_t *p = (const uint8_t *) s;

  sb_put (b, "\"", 1);
  for (; *p; p++) {
    char tmp[8];
    switch (*p) {
      case '"':
        sb_put (b, "\\\"", 2);
        break;
      case '\\':
        sb_put (b, "\\\\", 2);
        break;
      case '\b':
        sb_put (b, "\\b", 2);
        break;
      case '\f':
        sb_put (b, "\\f", 2);
        break;
      case '\n':
        sb_put (b, "\\n", 2);
        break;
      case '\r':
        sb_put (b, "\\r", 2);
        break;
      case '\t':
        sb_put (b, "\\t", 2);
        break;
      default:
        if (*p < 0x20) {
          snprintf (tmp, sizeof tmp, "\\u%04x", *p);
          sb_put (b, tmp, 6);
        } else {
          sb_put (b, (const char *) p, 1);
        }
    }
  }
  sb_put (b, "\"", 1);
}

static int
cmp_str_ptr (const void *a, const void *b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* Index of a duplicated string in names[0..n), or n.  0 on no memory. */
static int
find_duplicate (const char **names, size_t n, const char **dup)
{
  const char **sorted;
  size_t i;

  *dup = NULL;
  if (n < 2)
    return 1;
  sorted = malloc (n * sizeof *sorted);
  if (sorted == NULL)
    return 0;
  memcpy (sorted, names, n * sizeof *sorted);
  qsort (sorted, n, sizeof *sorted, cmp_str_ptr);
  for (i = 0; i + 1 < n; i++) {
    if (strcmp (sorted[i], sorted[i + 1]) == 0) {
      *dup = sorted[i];
      break;
    }
  }
  free (sorted);
  return 1;
}

static int
valid_utf8_string (const char *s)
{
  size_t n = strlen (s);
  return avf_utf8_check ((const uint8_t *) s, n) == n;
}

static AvfStatus
check_write_input (const AvfTensorOut * tensors, size_t n_tensors,
    const AvfMetadataEntry * metadata, size_t n_metadata, uint64_t * nbytes,
    AvfError * err)
{
  const char **names;
  const char *dup;
  uint64_t total = 0;
  size_t i, n_names;
  int d, ok;

  for (i = 0; i < n_tensors; i++) {
    const AvfTensorOut *t = &tensors[i];
    uint64_t numel = 1;
    if (t->name == NULL || !valid_utf8_string (t->name))
      return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor %zu has no "
          "name or a name that is not valid UTF-8", i);
    if (strcmp (t->name, "__metadata__") == 0)
      return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor %zu uses the "
          "reserved name \"__metadata__\"", i);
    if ((unsigned) t->dtype > (unsigned) AVF_DTYPE_U64)
      return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor \"%.64s\" has an "
          "invalid dtype %d", t->name, (int) t->dtype);
    if (t->ndim < 0 || t->ndim > AVF_SAFETENSORS_MAX_DIMS)
      return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor \"%.64s\" has %d "
          "dimensions (0 to %d allowed)", t->name, t->ndim,
          AVF_SAFETENSORS_MAX_DIMS);
    for (d = 0; d < t->ndim; d++)
      if (!avf_size_mul (&numel, numel, t->shape[d]))
        return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor \"%.64s\" has "
            "more elements than fit in 64 bits", t->name);
    if (!avf_size_mul (&nbytes[i], numel, avf_dtype_size (t->dtype))
        || nbytes[i] > SIZE_MAX || !avf_size_add (&total, total, nbytes[i]))
      return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor \"%.64s\" is too "
          "large to write", t->name);
    if (t->data == NULL && nbytes[i] > 0)
      return avf_error_set (err, AVF_ERR_INVALID, -1, "tensor \"%.64s\" has no "
          "data for its %" PRIu64 " bytes", t->name,
          nbytes[i]);
  }
  for (i = 0; i < n_metadata; i++) {
    if (metadata[i].key == NULL || metadata[i].value == NULL
        || !valid_utf8_string (metadata[i].key)
        || !valid_utf8_string (metadata[i].value))
      return avf_error_set (err, AVF_ERR_INVALID, -1, "metadata entry %zu "
          "is missing or not valid UTF-8", i);
  }

  n_names = n_tensors > n_metadata ? n_tensors : n_metadata;
  names = malloc ((n_names > 0 ? n_names : 1) * sizeof *names);
  if (names == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  for (i = 0; i < n_tensors; i++)
    names[i] = tensors[i].name;
  ok = find_duplicate (names, n_tensors, &dup);
  if (ok && dup != NULL) {
    free (names);
    return avf_error_set (err, AVF_ERR_INVALID, -1, "duplicate tensor name "
        "\"%.64s\"", dup);
  }
  for (i = 0; ok && i < n_metadata; i++)
    names[i] = metadata[i].key;
  ok = ok && find_duplicate (names, n_metadata, &dup);
  free (names);
  if (!ok)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  if (dup != NULL) {
    return avf_error_set (err, AVF_ERR_INVALID, -1, "duplicate metadata key "
        "\"%.64s\"", dup);
  }
  return AVF_OK;
}

static AvfStatus
write_all (FILE * f, const void *p, size_t n, const char *path,
    AvfError * err)
{
  if (n > 0 && fwrite (p, 1, n, f) != n)
    return avf_error_set (err, AVF_ERR_IO, -1, "cannot write \"%s\": %s",
        path, strerror (errno));
  return AVF_OK;
}

AvfStatus
avf_safetensors_write (const char *path, const AvfTensorOut * tensors,
    size_t n_tensors, const AvfMetadataEntry * metadata, size_t n_metadata,
    AvfError * err)
{
  StrBuf h = { NULL, 0, 0, 0 };
  uint64_t *nbytes = NULL, offset = 0;
  uint8_t len_bytes[8];
  char *tmp = NULL;
  FILE *f = NULL;
  AvfStatus status;
  size_t i;

  if (path == NULL || (n_tensors > 0 && tensors == NULL)
      || (n_metadata > 0 && metadata == NULL))
    return avf_error_set (err, AVF_ERR_INVALID, -1,
        "avf_safetensors_write needs a path, tensors and metadata");
  nbytes = calloc (n_tensors > 0 ? n_tensors : 1, sizeof *nbytes);
  if (nbytes == NULL)
    return avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
  status = check_write_input (tensors, n_tensors, metadata, n_metadata,
      nbytes, err);
  if (status != AVF_OK)
    goto done;

  /* Header: __metadata__ first, then the tensors in the given order. */
  sb_put (&h, "{", 1);
  if (n_metadata > 0) {
    sb_puts (&h, "\"__metadata__\":{");
    for (i = 0; i < n_metadata; i++) {
      if (i > 0)
        sb_put (&h, ",", 1);
      sb_put_json_string (&h, metadata[i].key);
      sb_put (&h, ":", 1);
      sb_put_json_string (&h, metadata[i].value);
    }
    sb_puts (&h, "}");
  }
  for (i = 0; i < n_tensors; i++) {
    const AvfTensorOut *t = &tensors[i];
    int d;
    if (i > 0 || n_metadata > 0)
      sb_put (&h, ",", 1);
    sb_put_json_string (&h, t->name);
    sb_puts (&h, ":{\"dtype\":\"");
    sb_puts (&h, avf_dtype_name (t->dtype));
    sb_puts (&h, "\",\"shape\":[");
    for (d = 0; d < t->ndim; d++) {
      if (d > 0)
        sb_put (&h, ",", 1);
      sb_put_u64 (&h, t->shape[d]);
    }
    sb_puts (&h, "],\"data_offsets\":[");
    sb_put_u64 (&h, offset);
    sb_put (&h, ",", 1);
    offset += nbytes[i];        /* the sum was checked */
    sb_put_u64 (&h, offset);
    sb_puts (&h, "]}");
  }
  sb_put (&h, "}", 1);
  /* Pad with spaces so the data starts on a multiple of 8. */
  while (!h.failed && (8 + h.len) % 8 != 0)
    sb_put (&h, " ", 1);
  if (h.failed) {
    status = avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory building "
        "the header of \"%s\"", path);
    goto done;
  }
  if (h.len > AVF_SAFETENSORS_MAX_HEADER) {
    status = avf_error_set (err, AVF_ERR_INVALID, -1, "the header of \"%s\" "
        "would be %zu bytes, more than the limit of %u", path, h.len,
        (unsigned) AVF_SAFETENSORS_MAX_HEADER);
    goto done;
  }
  for (i = 0; i < 8; i++)
    len_bytes[i] = (uint8_t) ((uint64_t) h.len >> (8 * i));

  tmp = malloc (strlen (path) + 5);
  if (tmp == NULL) {
    status = avf_error_set (err, AVF_ERR_NOMEM, -1, "out of memory");
    goto done;
  }
  strcpy (tmp, path);
  strcat (tmp, ".tmp");
  f = fopen (tmp, "wb");
  if (f == NULL) {
    status = avf_error_set (err, AVF_ERR_IO, -1, "cannot create \"%s\": %s",
        tmp, strerror (errno));
    goto done;
  }
  status = write_all (f, len_bytes, sizeof len_bytes, tmp, err);
  if (status == AVF_OK)
    status = write_all (f, h.p, h.len, tmp, err);
  for (i = 0; status == AVF_OK && i < n_tensors; i++)
    status = write_all (f, tensors[i].data, (size_t) nbytes[i], tmp, err);
  if (status == AVF_OK && (fflush (f) != 0 || fsync (fileno (f)) != 0))
    status = avf_error_set (err, AVF_ERR_IO, -1, "cannot write \"%s\": %s",
        tmp, strerror (errno));
  if (fclose (f) != 0 && status == AVF_OK)
    status = avf_error_set (err, AVF_ERR_IO, -1, "cannot write \"%s\": %s",
        tmp, strerror (errno));
  f = NULL;
  if (status == AVF_OK && rename (tmp, path) != 0)
    status = avf_error_set (err, AVF_ERR_IO, -1, "cannot rename \"%s\" to "
        "\"%s\": %s", tmp, path, strerror (errno));
  if (status != AVF_OK)
    remove (tmp);

done:
  free (tmp);
  free (h.p);
  free (nbytes);
  return status;
}

AvfStatus
avf_weights_save (const AvfWeights * w, const char *path, AvfError * err)
{
  const AvfConfig *c = &w->cfg;
  size_t n = avf_weights_n_tensors (w);
  AvfWeightTensor *tensors = calloc (n, sizeof *tensors);
  AvfTensorOut *outs = calloc (n, sizeof *outs);
  if (!tensors || !outs) {
    free (tensors);
    free (outs);
    return avf_error_set (err, AVF_ERR_NOMEM, -1,
        "cannot allocate the tensor list");
  }
  for (size_t i = 0; i < n; i++) {
    if (!avf_weights_tensor (w, i, &tensors[i])) {
      free (tensors);
      free (outs);
      return avf_error_set (err, AVF_ERR_NOMEM, -1,
          "cannot enumerate the tensors");
    }
    outs[i].name = tensors[i].name;
    outs[i].dtype = AVF_DTYPE_F32;
    outs[i].ndim = tensors[i].ndim;
    for (int d = 0; d < tensors[i].ndim; d++)
      outs[i].shape[d] = tensors[i].shape[d];
    outs[i].data = tensors[i].data;
  }

  char vals[16][32];
  AvfMetadataEntry meta[16];
  size_t nm = 0;
  meta[nm++] = (AvfMetadataEntry) {
  "format", avf_weights_format (w)};
  const struct
  {
    const char *key;
    int value;
  } ints[] = {
    {"num_heads", c->H}, {"n_mels", c->M}, {"patch_size", c->P},
    {"sample_rate", c->sample_rate}, {"n_fft", c->n_fft},
    {"hop_length", c->hop_length}, {"window_ms", c->window_ms},
    {"rhythm_bin_slots", w->rhythm.G},
  };
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
    if (ints[i].value <= 0)
      continue;
    snprintf (vals[nm], sizeof vals[nm], "%d", ints[i].value);
    meta[nm] = (AvfMetadataEntry) {
    ints[i].key, vals[nm]};
    nm++;
  }
  if (w->rhythm.D > 0) {
    /* any sign: written for every avfusion-v2 model */
    snprintf (vals[nm], sizeof vals[nm], "%d", w->rhythm.lag_min);
    meta[nm] = (AvfMetadataEntry) {
    "rhythm_lag_min", vals[nm]};
    nm++;
  }
  if (w->rhythm.D > 0 && w->rhythm.neighbourhood > 1) {
    /* as avfusion2.export_state_dict: only when not 1 */
    snprintf (vals[nm], sizeof vals[nm], "%d", w->rhythm.neighbourhood);
    meta[nm] = (AvfMetadataEntry) {
    "rhythm_neighbourhood", vals[nm]};
    nm++;
  }
  if (w->rhythm.D > 0 && w->rhythm.neighbourhood > 1
      && w->rhythm.neighbourhood_from > 0) {
    snprintf (vals[nm], sizeof vals[nm], "%d", w->rhythm.neighbourhood_from);
    meta[nm] = (AvfMetadataEntry) {
    "rhythm_neighbourhood_from", vals[nm]};
    nm++;
  }
  if (c->visible_threshold > 0.0f) {
    /* %.9g: the float reads back to the same bits */
    snprintf (vals[nm], sizeof vals[nm], "%.9g", (double) c->visible_threshold);
    meta[nm] = (AvfMetadataEntry) {
    "visible_threshold", vals[nm]};
    nm++;
  }
  AvfStatus status = avf_safetensors_write (path, outs, n, meta, nm, err);
  free (tensors);
  free (outs);
  return status;
}
