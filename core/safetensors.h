/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * safetensors: a strict reader of the safetensors format
 * (8-byte little-endian header length N, N bytes of UTF-8 JSON, raw data).
 * Validation follows the format's own rules (safetensors/src/tensor.rs
 * validate()): header length bounds, UTF-8 JSON object, no duplicate names,
 * string-only __metadata__, known dtypes, checked shape x dtype arithmetic,
 * offsets contiguous from 0 with no holes or overlaps, data ending exactly at
 * the end of the file.  Every error names what is wrong and where (tensor
 * name, byte offset in the file).
 */
#ifndef AVF_SAFETENSORS_H
#define AVF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "avf_error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Header larger than this is refused (same bound as the reference). */
#define AVF_SAFETENSORS_MAX_HEADER (100u * 1000u * 1000u)
#define AVF_SAFETENSORS_MAX_DIMS 8
/* JSON nesting deeper than this is refused. */
#define AVF_SAFETENSORS_MAX_DEPTH 16

typedef enum {
  AVF_DTYPE_BOOL, AVF_DTYPE_U8, AVF_DTYPE_I8, AVF_DTYPE_F8_E5M2,
  AVF_DTYPE_F8_E4M3, AVF_DTYPE_I16, AVF_DTYPE_U16, AVF_DTYPE_F16,
  AVF_DTYPE_BF16, AVF_DTYPE_I32, AVF_DTYPE_U32, AVF_DTYPE_F32,
  AVF_DTYPE_F64, AVF_DTYPE_I64, AVF_DTYPE_U64
} AvfDtype;

typedef struct {
  const char *name;             /* NUL-terminated, owned by the reader */
  AvfDtype dtype;
  int ndim;
  uint64_t shape[AVF_SAFETENSORS_MAX_DIMS];
  uint64_t numel;
  uint64_t begin, end;          /* data_offsets, relative to the data area */
  const uint8_t *data;          /* points into the reader's buffer; may be unaligned */
} AvfTensorInfo;

typedef struct {
  const char *key;
  const char *value;
} AvfMetadataEntry;

typedef struct AvfSafetensors AvfSafetensors;

/* The header length N that the first 8 bytes of a file give
 * (little-endian), before any check. */
uint64_t avf_safetensors_header_length (const uint8_t * buf);

/* Parses a whole file image.  The bytes are copied; buf may be freed after. */
AvfStatus avf_safetensors_parse (AvfSafetensors ** out, const uint8_t * buf,
    size_t len, AvfError * err);
/* Reads and parses a file.  A missing file is AVF_ERR_NOT_FOUND. */
AvfStatus avf_safetensors_open (AvfSafetensors ** out, const char *path,
    AvfError * err);
void avf_safetensors_free (AvfSafetensors * st);

/* Tensors in file order of their data offsets. */
size_t avf_safetensors_count (const AvfSafetensors * st);
const AvfTensorInfo *avf_safetensors_tensor (const AvfSafetensors * st,
    size_t i);
const AvfTensorInfo *avf_safetensors_find (const AvfSafetensors * st,
    const char *name);

size_t avf_safetensors_metadata_count (const AvfSafetensors * st);
const AvfMetadataEntry *avf_safetensors_metadata_entry (const AvfSafetensors *
    st, size_t i);
/* NULL when the key is absent. */
const char *avf_safetensors_metadata (const AvfSafetensors * st,
    const char *key);

const char *avf_dtype_name (AvfDtype dtype);
size_t avf_dtype_size (AvfDtype dtype);

/* Index of the first byte of s[0..n) that is not valid UTF-8 (an overlong
 * form, a surrogate, a code point above U+10FFFF), or n. */
size_t avf_utf8_check (const uint8_t * s, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* AVF_SAFETENSORS_H */
