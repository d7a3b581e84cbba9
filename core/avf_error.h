/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * avf_error: the status codes and the caller-owned error record that every
 * core function fills on failure.  Core never exits or aborts on bad input.
 */
#ifndef AVF_ERROR_H
#define AVF_ERROR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  AVF_OK = 0,
  AVF_ERR_INVALID,   /* bad argument or configuration */
  AVF_ERR_NOT_FOUND, /* file missing */
  AVF_ERR_IO,        /* read/write failure */
  AVF_ERR_FORMAT,    /* malformed file contents */
  AVF_ERR_SHAPE,     /* tensor set inconsistent with the model */
  AVF_ERR_NOMEM      /* allocation failed or size overflow */
} AvfStatus;

#define AVF_ERROR_MESSAGE_MAX 512

typedef struct {
  AvfStatus status;
  int64_t offset;                        /* byte offset in the file, or -1 */
  char message[AVF_ERROR_MESSAGE_MAX];
} AvfError;

/* Fills err (when not NULL) and returns status.  printf-style message. */
AvfStatus avf_error_set (AvfError * err, AvfStatus status, int64_t offset,
    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format (printf, 4, 5)))
#endif
    ;

void avf_error_clear (AvfError * err);

/* A short English name of a status ("format error", ...). */
const char *avf_status_name (AvfStatus status);

/* Overflow-checked size arithmetic: return 0 on overflow, 1 on success. */
int avf_size_mul (uint64_t * out, uint64_t a, uint64_t b);
int avf_size_add (uint64_t * out, uint64_t a, uint64_t b);

#ifdef __cplusplus
}
#endif
#endif /* AVF_ERROR_H */
