/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * json_lex: the JSON lexer shared by the syntax check and the typed walk of
 * core/safetensors.c, the generic syntax check (step 3a of the reader), the
 * UTF-8 check (step 2) and the helpers that quote names and bytes in error
 * messages.
 */
#include "json_lex.h"
#include "safetensors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A format error; " at offset N" is appended when offset >= 0. */
AvfStatus
avf_fail_format (AvfError * err, int64_t offset, const char *fmt, ...)
{
  char msg[AVF_ERROR_MESSAGE_MAX];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  if (offset < 0)
    return avf_error_set (err, AVF_ERR_FORMAT, -1, "%s", msg);
  return avf_error_set (err, AVF_ERR_FORMAT, offset, "%s at offset %"
      PRId64, msg, offset);
}

/* Length of the valid UTF-8 sequence at s (n > 0 bytes available), or 0.
 * Rejects overlong forms, surrogates and code points above U+10FFFF. */
static size_t
utf8_sequence (const uint8_t * s, size_t n)
{
  uint8_t c = s[0], lo = 0x80, hi = 0xbf;
  size_t len, i;

  if (c < 0x80)
    return 1;
  if (c < 0xc2)
    return 0;
  if (c < 0xe0) {
    len = 2;
  } else if (c < 0xf0) {
    len = 3;
    if (c == 0xe0)
      lo = 0xa0;
    else if (c == 0xed)
      hi = 0x9f;
  } else if (c < 0xf5) {
    len = 4;
    if (c == 0xf0)
      lo = 0x90;
    else if (c == 0xf4)
      hi = 0x8f;
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return len;
}

size_t
avf_utf8_check (const uint8_t * s, size_t n)
{
  size_t i = 0;

  while (i < n) {
    size_t k = utf8_sequence (s + i, n - i);
    if (k == 0)
      return i;
    i += k;
  }
  return n;
}

/* A name made safe to quote in a message: at most SHOWN_NAME_MAX bytes,
 * cut on a character boundary, control and invalid bytes as \xNN. */
const char *
avf_show_name (ShownName * buf, const char *name)
{
  const uint8_t *p = (const uint8_t *) name;
  size_t n = strlen (name), i = 0, o = 0;

  while (i < n) {
    size_t k = utf8_sequence (p + i, n - i);
    if (i + (k ? k : 1) > SHOWN_NAME_MAX) {
      memcpy (buf->s + o, "...", 3);
      o += 3;
      break;
    }
    if (k == 0 || p[i] < 0x20 || p[i] == 0x7f) {
      snprintf (buf->s + o, 5, "\\x%02x", p[i]);
      o += 4;
      i++;
    } else {
      memcpy (buf->s + o, p + i, k);
      o += k;
      i += k;
    }
  }
  buf->s[o] = '\0';
  return buf->s;
}

/* A byte for a message: 'c' when printable ASCII, else 0xNN. */
const char *
avf_show_byte (char buf[8], uint8_t c)
{
  if (c > 0x20 && c < 0x7f)
    snprintf (buf, 8, "'%c'", c);
  else
    snprintf (buf, 8, "0x%02x", c);
  return buf;
}

/* ------------------------------------------------------------------ */
/* JSON lexing (shared by the syntax check and the typed walk)         */

static int
is_ws (uint8_t c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void
avf_json_skip_ws (Json * j)
{
  while (j->pos < j->n && is_ws (j->s[j->pos]))
    j->pos++;
}

/* The byte at the cursor, or -1 at the end of the header. */
int
avf_json_peek (const Json * j)
{
  return j->pos < j->n ? j->s[j->pos] : -1;
}

AvfStatus
avf_json_expect (Json * j, uint8_t c, const char *what)
{
  char b[8];

  avf_json_skip_ws (j);
  if (j->pos >= j->n)
    return JFAIL (j, j->n, "unexpected end of the header, expected %s", what);
  if (j->s[j->pos] != c)
    return JFAIL (j, j->pos, "expected %s, found %s", what,
        avf_show_byte (b, j->s[j->pos]));
  j->pos++;
  return AVF_OK;
}

static int
json_hex4 (Json * j, uint32_t * out)
{
  uint32_t v = 0;
  size_t i;

  if (j->n - j->pos < 4)
    return 0;
  for (i = 0; i < 4; i++) {
    uint8_t c = j->s[j->pos + i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (uint32_t) (c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (uint32_t) (c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (uint32_t) (c - 'A' + 10);
    else
      return 0;
  }
  j->pos += 4;
  *out = v;
  return 1;
}

/* Appends one byte of a decoded string; out == NULL only counts. */
static int
emit_byte (char *out, size_t cap, size_t * len, uint8_t b)
{
  if (out != NULL) {
    if (*len + 1 >= cap)
      return 0;
    out[*len] = (char) b;
  }
  (*len)++;
  return 1;
}

static int
emit_code_point (char *out, size_t cap, size_t * len, uint32_t cp)
{
  if (cp < 0x80)
    return emit_byte (out, cap, len, (uint8_t) cp);
  if (cp < 0x800)
    return emit_byte (out, cap, len, (uint8_t) (0xc0 | (cp >> 6)))
        && emit_byte (out, cap, len, (uint8_t) (0x80 | (cp & 0x3f)));
  if (cp < 0x10000)
    return emit_byte (out, cap, len, (uint8_t) (0xe0 | (cp >> 12)))
        && emit_byte (out, cap, len, (uint8_t) (0x80 | ((cp >> 6) & 0x3f)))
        && emit_byte (out, cap, len, (uint8_t) (0x80 | (cp & 0x3f)));
  return emit_byte (out, cap, len, (uint8_t) (0xf0 | (cp >> 18)))
      && emit_byte (out, cap, len, (uint8_t) (0x80 | ((cp >> 12) & 0x3f)))
      && emit_byte (out, cap, len, (uint8_t) (0x80 | ((cp >> 6) & 0x3f)))
      && emit_byte (out, cap, len, (uint8_t) (0x80 | (cp & 0x3f)));
}

/* Lexes the string at the cursor (which is on '"').  With out != NULL the
 * decoded bytes and a NUL go there (cap bytes available).  The header is
 * already known to be valid UTF-8, so raw bytes are copied as they are.
 * A decoded string is never longer than its literal minus the quotes. */
AvfStatus
avf_json_string (Json * j, char *out, size_t cap, size_t * out_len)
{
  size_t start = j->pos, len = 0;
  char b[8];

  j->pos++;
  for (;;) {
    uint8_t c;
    size_t esc;
    uint32_t cp;

    if (j->pos >= j->n)
      return JFAIL (j, start, "unterminated string");
    c = j->s[j->pos];
    if (c == '"') {
      j->pos++;
      break;
    }
    if (c < 0x20)
      return JFAIL (j, j->pos, "control character 0x%02x inside a string", c);
    if (c != '\\') {
      if (!emit_byte (out, cap, &len, c))
        goto overflow;
      j->pos++;
      continue;
    }
    esc = j->pos;
    if (j->n - j->pos < 2)
      return JFAIL (j, start, "unterminated string");
    c = j->s[j->pos + 1];
    j->pos += 2;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        cp = c;
        break;
      case 'b':
        cp = 0x08;
        break;
      case 'f':
        cp = 0x0c;
        break;
      case 'n':
        cp = 0x0a;
        break;
      case 'r':
        cp = 0x0d;
        break;
      case 't':
        cp = 0x09;
        break;
      case 'u':
        if (!json_hex4 (j, &cp))
          return JFAIL (j, esc, "invalid \\u escape (needs 4 hex digits)");
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return JFAIL (j, esc, "unpaired low surrogate \\u%04" PRIx32
              " in a string", cp);
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t lo;
          if (j->n - j->pos < 2 || j->s[j->pos] != '\\'
              || j->s[j->pos + 1] != 'u')
            return JFAIL (j, esc, "high surrogate \\u%04" PRIx32
                " is not followed by a low surrogate", cp);
          j->pos += 2;
          if (!json_hex4 (j, &lo))
            return JFAIL (j, j->pos - 2,
                "invalid \\u escape (needs 4 hex digits)");
          if (lo < 0xdc00 || lo > 0xdfff)
            return JFAIL (j, esc, "high surrogate \\u%04" PRIx32
                " is not followed by a low surrogate", cp);
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        break;
      default:
        return JFAIL (j, esc, "invalid escape \\%s in a string",
            avf_show_byte (b, c));
    }
    if (!emit_code_point (out, cap, &len, cp))
      goto overflow;
  }
  if (out != NULL) {
    if (len >= cap)
      goto overflow;
    out[len] = '\0';
  }
  *out_len = len;
  return AVF_OK;

overflow:
  /* Cannot happen: the pool holds the whole header plus one byte. */
  return JFAIL (j, start, "string does not fit the string pool");
}

/* Lexes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
AvfStatus
avf_json_number (Json * j, NumTok * t)
{
  const uint8_t *s = j->s;
  size_t n = j->n, p = j->pos;

  t->start = p;
  t->negative = 0;
  t->integer = 1;
  if (p < n && s[p] == '-') {
    t->negative = 1;
    p++;
  }
  if (p >= n || !is_digit (s[p]))
    return JFAIL (j, t->start, "invalid number");
  if (s[p] == '0') {
    p++;
    if (p < n && is_digit (s[p]))
      return JFAIL (j, t->start, "invalid number (leading zero)");
  } else {
    while (p < n && is_digit (s[p]))
      p++;
  }
  if (p < n && s[p] == '.') {
    t->integer = 0;
    p++;
    if (p >= n || !is_digit (s[p]))
      return JFAIL (j, t->start, "invalid number (no digit after '.')");
    while (p < n && is_digit (s[p]))
      p++;
  }
  if (p < n && (s[p] == 'e' || s[p] == 'E')) {
    t->integer = 0;
    p++;
    if (p < n && (s[p] == '+' || s[p] == '-'))
      p++;
    if (p >= n || !is_digit (s[p]))
      return JFAIL (j, t->start, "invalid number (no digit in the exponent)");
    while (p < n && is_digit (s[p]))
      p++;
  }
  t->end = p;
  j->pos = p;
  return AVF_OK;
}

static AvfStatus
json_literal (Json * j, const char *word)
{
  size_t len = strlen (word);

  if (j->n - j->pos < len || memcmp (j->s + j->pos, word, len) != 0)
    return JFAIL (j, j->pos, "invalid literal (expected %s)", word);
  j->pos += len;
  return AVF_OK;
}

/* ------------------------------------------------------------------ */
/* Step 3a: generic syntax check, no allocation, depth-limited          */

static AvfStatus
json_check_container (Json * j, int depth, int is_object)
{
  uint8_t close = is_object ? '}' : ']';
  AvfStatus st;
  size_t len;
  char b[8];

  j->pos++;
  avf_json_skip_ws (j);
  if (avf_json_peek (j) == close) {
    j->pos++;
    return AVF_OK;
  }
  for (;;) {
    if (is_object) {
      avf_json_skip_ws (j);
      if (j->pos >= j->n)
        return JFAIL (j, j->n, "unexpected end of the header inside an "
            "object");
      if (j->s[j->pos] != '"')
        return JFAIL (j, j->pos, "expected a string key, found %s",
            avf_show_byte (b, j->s[j->pos]));
      if ((st = avf_json_string (j, NULL, 0, &len)) != AVF_OK)
        return st;
      if ((st = avf_json_expect (j, ':', "':' after an object key")) != AVF_OK)
        return st;
    }
    if ((st = avf_json_check_value (j, depth + 1)) != AVF_OK)
      return st;
    avf_json_skip_ws (j);
    if (j->pos >= j->n)
      return JFAIL (j, j->n, "unexpected end of the header inside %s",
          is_object ? "an object" : "an array");
    if (j->s[j->pos] == ',') {
      j->pos++;
      continue;
    }
    if (j->s[j->pos] == close) {
      j->pos++;
      return AVF_OK;
    }
    return JFAIL (j, j->pos, "expected ',' or '%c', found %s", close,
        avf_show_byte (b, j->s[j->pos]));
  }
}

AvfStatus
avf_json_check_value (Json * j, int depth)
{
  NumTok tok;
  size_t len;
  char b[8];
  int c;

  avf_json_skip_ws (j);
  c = avf_json_peek (j);
  switch (c) {
    case -1:
      return JFAIL (j, j->n, "unexpected end of the header, expected a "
          "value");
    case '{':
    case '[':
      if (depth > AVF_SAFETENSORS_MAX_DEPTH)
        return JFAIL (j, j->pos, "JSON nesting deeper than %d levels",
            AVF_SAFETENSORS_MAX_DEPTH);
      return json_check_container (j, depth, c == '{');
    case '"':
      return avf_json_string (j, NULL, 0, &len);
    case 't':
      return json_literal (j, "true");
    case 'f':
      return json_literal (j, "false");
    case 'n':
      return json_literal (j, "null");
    default:
      if (c == '-' || is_digit ((uint8_t) c))
        return avf_json_number (j, &tok);
      return JFAIL (j, j->pos, "unexpected %s, expected a JSON value",
          avf_show_byte (b, (uint8_t) c));
  }
}
