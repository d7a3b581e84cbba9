/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * json_lex: the JSON lexer and the generic syntax check of a safetensors
 * header, and the helpers their messages use (internal to core/, not
 * installed).  Positions are bytes into the header; error offsets are
 * offsets in the file (the header follows the 8-byte header length).
 */
#ifndef AVF_JSON_LEX_H
#define AVF_JSON_LEX_H

#include <stddef.h>
#include <stdint.h>

#include "avf_error.h"

#if defined(__GNUC__)
#define AVF_PRINTF(fmt, args) __attribute__((format (printf, fmt, args)))
#else
#define AVF_PRINTF(fmt, args)
#endif

/* Bytes of the little-endian header length that starts every file. */
#define HEADER_LEN_BYTES 8
/* At most this many bytes of a name are quoted in an error message. */
#define SHOWN_NAME_MAX 64

typedef struct {
  char s[SHOWN_NAME_MAX * 4 + 8];
} ShownName;

typedef struct {
  const uint8_t *s;             /* header bytes */
  size_t n;
  size_t pos;
  AvfError *err;
  char *pool;                   /* decoded strings (typed walk only) */
  size_t pool_size;
  size_t pool_used;
} Json;

typedef struct {
  size_t start, end;            /* header positions of the literal */
  int negative;
  int integer;                  /* no fraction, no exponent */
} NumTok;

/* A format error; " at offset N" is appended when offset >= 0. */
AvfStatus avf_fail_format (AvfError * err, int64_t offset, const char *fmt,
    ...) AVF_PRINTF (3, 4);
/* A name made safe to quote in a message: at most SHOWN_NAME_MAX bytes,
 * cut on a character boundary, control and invalid bytes as \xNN. */
const char *avf_show_name (ShownName * buf, const char *name);
/* A byte for a message: 'c' when printable ASCII, else 0xNN. */
const char *avf_show_byte (char buf[8], uint8_t c);

static inline int64_t
file_off (size_t header_pos)
{
  return (int64_t) (HEADER_LEN_BYTES + header_pos);
}

#define JFAIL(j, pos, ...) avf_fail_format ((j)->err, file_off (pos), __VA_ARGS__)

static inline int
is_digit (uint8_t c)
{
  return c >= '0' && c <= '9';
}

void avf_json_skip_ws (Json * j);
/* The byte at the cursor, or -1 at the end of the header. */
int avf_json_peek (const Json * j);
AvfStatus avf_json_expect (Json * j, uint8_t c, const char *what);
/* Lexes the string at the cursor (which is on '"').  With out != NULL the
 * decoded bytes and a NUL go there (cap bytes available). */
AvfStatus avf_json_string (Json * j, char *out, size_t cap,
    size_t * out_len);
/* Lexes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
AvfStatus avf_json_number (Json * j, NumTok * t);
/* Step 3a: checks the syntax of the value at the cursor, without
 * allocating, refusing nesting deeper than AVF_SAFETENSORS_MAX_DEPTH. */
AvfStatus avf_json_check_value (Json * j, int depth);

#endif /* AVF_JSON_LEX_H */
