/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "avf_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

AvfStatus
avf_error_set (AvfError * err, AvfStatus status, int64_t offset,
    const char *fmt, ...)
{
  if (err != NULL) {
    va_list ap;
    err->status = status;
    err->offset = offset;
    va_start (ap, fmt);
    vsnprintf (err->message, sizeof err->message, fmt, ap);
    va_end (ap);
  }
  return status;
}

void
avf_error_clear (AvfError * err)
{
  if (err != NULL) {
    err->status = AVF_OK;
    err->offset = -1;
    err->message[0] = '\0';
  }
}

const char *
avf_status_name (AvfStatus status)
{
  switch (status) {
    case AVF_OK:
      return "ok";
    case AVF_ERR_INVALID:
      return "invalid argument";
    case AVF_ERR_NOT_FOUND:
      return "not found";
    case AVF_ERR_IO:
      return "i/o error";
    case AVF_ERR_FORMAT:
      return "format error";
    case AVF_ERR_SHAPE:
      return "shape error";
    case AVF_ERR_NOMEM:
      return "out of memory";
  }
  return "unknown status";
}

int
avf_size_mul (uint64_t * out, uint64_t a, uint64_t b)
{
  if (a != 0 && b > UINT64_MAX / a)
    return 0;
  *out = a * b;
  return 1;
}

int
avf_size_add (uint64_t * out, uint64_t a, uint64_t b)
{
  if (b > UINT64_MAX - a)
    return 0;
  *out = a + b;
  return 1;
}
