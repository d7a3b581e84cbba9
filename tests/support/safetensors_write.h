/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * safetensors_write: the writer the tests (and nothing else) use to make
 * weights files; core only reads the format (core/safetensors.h).
 */
#ifndef AVF_SAFETENSORS_WRITE_H
#define AVF_SAFETENSORS_WRITE_H

#include "safetensors.h"
#include "weights.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor to write. */
typedef struct {
  const char *name;
  AvfDtype dtype;
  int ndim;
  uint64_t shape[AVF_SAFETENSORS_MAX_DIMS];
  const void *data;             /* numel * dtype size bytes, little-endian */
} AvfTensorOut;

/* Writes the tensors in the given order with contiguous offsets, the
 * metadata first, to @path (through @path.tmp, renamed when complete).
 * Names and metadata must be valid UTF-8 and unique. */
AvfStatus avf_safetensors_write (const char *path, const AvfTensorOut * tensors,
    size_t n_tensors, const AvfMetadataEntry * metadata, size_t n_metadata,
    AvfError * err);

/* Writes the tensor set in canonical order (avf_weights_tensor) with
 * avfusion-v1 metadata, or avfusion-v2's with rhythm_bin_slots and
 * rhythm_lag_min for a v2 model, rhythm_neighbourhood when above 1
 * (visible_threshold too when it is above 0). */
AvfStatus avf_weights_save (const AvfWeights * w, const char *path,
    AvfError * err);

#ifdef __cplusplus
}
#endif
#endif /* AVF_SAFETENSORS_WRITE_H */
