/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * fuzz_safetensors: libFuzzer harness for the safetensors reader
 * (core/safetensors.c).  Every input is a whole file image handed to
 * avf_safetensors_parse.  Bad input must come back as an error status with
 * a message, never as a crash, a leak or a hang.  On success every tensor's
 * data bytes are read (so ASan sees any pointer past the image), every
 * name is looked up again, and the promises of safetensors.h are checked:
 * a broken promise is a bug in the reader and stops the fuzzer with a trap.
 *
 * Build and run: fuzz/run-fuzzers.sh (see docs/fuzzing.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput (const uint8_t * data, size_t size);

/* Keeps the byte sums alive so the reads cannot be optimised away. */
static volatile uint64_t sink;

#define CHECK(cond) do { if (!(cond)) __builtin_trap (); } while (0)

static void
check_failure (AvfStatus status, const AvfSafetensors * st,
    const AvfError * err)
{
  size_t len;

  CHECK (st == NULL);
  CHECK (err->status == status);
  /* only these statuses may come out of the parser */
  CHECK (status == AVF_ERR_FORMAT || status == AVF_ERR_NOMEM);
  len = strnlen (err->message, sizeof err->message);
  CHECK (len > 0 && len < sizeof err->message);
}

/* image[0..size) is the input that parsed; the data area starts after the
 * 8-byte length and the header. */
static void
check_tensors (const AvfSafetensors * st, const uint8_t * image, size_t size)
{
  size_t n = avf_safetensors_count (st), i;
  uint64_t expect = 0, sum = 0, header_len, data_len;
  const uint8_t *data_area;

  CHECK (size >= 8);
  header_len = avf_safetensors_header_length (image);
  CHECK (header_len > 0 && header_len <= size - 8);
  data_area = image + 8 + header_len;
  data_len = size - 8 - header_len;

  for (i = 0; i < n; i++) {
    const AvfTensorInfo *t = avf_safetensors_tensor (st, i);
    uint64_t numel = 1, k;
    size_t esize;
    int d;

    CHECK (t != NULL && t->name != NULL);
    CHECK (t->ndim >= 0 && t->ndim <= AVF_SAFETENSORS_MAX_DIMS);
    esize = avf_dtype_size (t->dtype);
    CHECK (esize > 0);
    for (d = 0; d < t->ndim; d++)
      CHECK (avf_size_mul (&numel, numel, t->shape[d]));
    CHECK (numel == t->numel);
    /* sorted by offset, contiguous from 0, sized by shape x dtype */
    CHECK (t->begin == expect && t->end >= t->begin);
    CHECK (avf_size_mul (&k, numel, esize) && t->end - t->begin == k);
    CHECK (t->end <= data_len);
    expect = t->end;
    /* touch every byte of the tensor: they are the input's bytes, copied */
    CHECK (t->data != NULL);
    for (k = 0; k < t->end - t->begin; k++) {
      CHECK (t->data[k] == data_area[t->begin + k]);
      sum += t->data[k];
    }
    /* names are unique: find() returns this very record */
    CHECK (avf_safetensors_find (st, t->name) == t);
    sum += strlen (t->name);
  }
  /* the tensors cover the data area exactly */
  CHECK (expect == data_len);
  CHECK (avf_safetensors_tensor (st, n) == NULL);
  sink += sum;
}

static void
check_metadata (const AvfSafetensors * st)
{
  size_t n = avf_safetensors_metadata_count (st), i;
  uint64_t sum = 0;

  for (i = 0; i < n; i++) {
    const AvfMetadataEntry *m = avf_safetensors_metadata_entry (st, i);

    CHECK (m != NULL && m->key != NULL && m->value != NULL);
    sum += strlen (m->key) + strlen (m->value);
    /* keys are unique: the lookup returns this very value */
    CHECK (avf_safetensors_metadata (st, m->key) == m->value);
    /* looking a metadata key up as a tensor name must be harmless */
    (void) avf_safetensors_find (st, m->key);
  }
  CHECK (avf_safetensors_metadata_entry (st, n) == NULL);
  sink += sum;
}

int
LLVMFuzzerTestOneInput (const uint8_t * data, size_t size)
{
  AvfSafetensors *st = NULL;
  AvfError err;
  AvfStatus status;

  avf_error_clear (&err);
  status = avf_safetensors_parse (&st, data, size, &err);
  if (status != AVF_OK) {
    check_failure (status, st, &err);
    return 0;
  }
  CHECK (st != NULL);
  check_tensors (st, data, size);
  check_metadata (st);
  /* lookups of names that are not there */
  CHECK (avf_safetensors_find (st, "") == NULL
      || avf_safetensors_find (st, "")->name[0] == '\0');
  (void) avf_safetensors_metadata (st, "format");
  avf_safetensors_free (st);
  return 0;
}
