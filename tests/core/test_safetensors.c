/* avattention — attention for media pipelines
 * Copyright (C) 2026 The avattention authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Tests of the safetensors reader and writer.  Every malformed file is
 * built in memory (8-byte length + header + data) and must fail with the
 * exact status, a distinctive message and, where meaningful, the offset.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "safetensors.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "avf_test.h"
#include "safetensors_write.h"

/* Pass as the expected offset to skip the offset check. */
#define ANY_OFFSET INT64_MIN

static const uint8_t zeros[256];

static void
put_le64 (uint8_t * p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

/* A file image: 8-byte length n, the header bytes, then data. */
static uint8_t *
image_raw (uint64_t n, const char *header, size_t header_len,
    const void *data, size_t data_len, size_t * len)
{
  uint8_t *b;

  *len = 8 + header_len + data_len;
  b = malloc (*len);
  if (b == NULL) {
    fprintf (stderr, "out of memory\n");
    exit (2);
  }
  put_le64 (b, n);
  if (header_len > 0)
    memcpy (b + 8, header, header_len);
  if (data_len > 0)
    memcpy (b + 8 + header_len, data, data_len);
  return b;
}

static uint8_t *
image (const char *header, const void *data, size_t data_len, size_t * len)
{
  size_t n = strlen (header);
  return image_raw (n, header, n, data, data_len, len);
}

static void
expect_fail_buf (const char *what, const uint8_t * buf, size_t len,
    AvfStatus status, const char *needle, int64_t offset)
{
  AvfSafetensors *st = (AvfSafetensors *) & st;  /* must be reset to NULL */
  AvfError err;
  AvfStatus got;

  avf_error_clear (&err);
  got = avf_safetensors_parse (&st, buf, len, &err);
  AVF_CHECK (got == status, "%s: status %s, expected %s (%s)", what,
      avf_status_name (got), avf_status_name (status), err.message);
  AVF_CHECK (err.status == got, "%s: err.status not set", what);
  AVF_CHECK (st == NULL, "%s: output not NULL on failure", what);
  AVF_CHECK (strstr (err.message, needle) != NULL,
      "%s: \"%s\" does not contain \"%s\"", what, err.message, needle);
  if (offset != ANY_OFFSET)
    AVF_CHECK (err.offset == offset, "%s: offset %lld, expected %lld (%s)",
        what, (long long) err.offset, (long long) offset, err.message);
  if (getenv ("AVF_TEST_VERBOSE"))
    printf ("  %s: %s\n", what, err.message);
  if (got == AVF_OK)
    avf_safetensors_free (st);
}

/* Header + data must fail with status, needle and offset. */
static void
expect_fail (const char *what, const char *header, const void *data,
    size_t data_len, AvfStatus status, const char *needle, int64_t offset)
{
  size_t len;
  uint8_t *b = image (header, data, data_len, &len);
  expect_fail_buf (what, b, len, status, needle, offset);
  free (b);
}

/* File offset of the first occurrence of needle in header. */
static int64_t
at (const char *header, const char *needle)
{
  const char *p = strstr (header, needle);
  return p ? 8 + (int64_t) (p - header) : -1000;
}

static AvfSafetensors *
expect_ok (const char *what, const char *header, const void *data,
    size_t data_len)
{
  AvfSafetensors *st = NULL;
  AvfError err;
  size_t len;
  uint8_t *b = image (header, data, data_len, &len);
  AvfStatus s;

  avf_error_clear (&err);
  s = avf_safetensors_parse (&st, b, len, &err);
  AVF_CHECK (s == AVF_OK, "%s: %s", what, err.message);
  free (b);                     /* the reader keeps its own copy */
  return st;
}

/* ------------------------------------------------------------------ */
/* Header length                                                       */

static void
test_shorter_than_8_bytes (void)
{
  const uint8_t b[5] = { 1, 0, 0, 0, 0 };
  expect_fail_buf (__func__, b, sizeof b, AVF_ERR_FORMAT,
      "file is 5 bytes, shorter than the 8-byte header length", 0);
  expect_fail_buf (__func__, NULL, 0, AVF_ERR_FORMAT,
      "file is 0 bytes", 0);
}

static void
test_header_len_zero (void)
{
  size_t len;
  uint8_t *b = image_raw (0, "{}", 2, NULL, 0, &len);
  expect_fail_buf (__func__, b, len, AVF_ERR_FORMAT, "header length is 0",
      0);
  free (b);
}

static void
test_header_len_over_100mb (void)
{
  size_t len;
  uint8_t *b = image_raw (100000001, "{}", 2, NULL, 0, &len);
  expect_fail_buf (__func__, b, len, AVF_ERR_FORMAT,
      "header length 100000001 is larger than the limit of 100000000 bytes",
      0);
  free (b);
}

static void
test_header_len_past_eof (void)
{
  size_t len;
  uint8_t *b = image_raw (11, "{}      ", 8, NULL, 0, &len);
  expect_fail_buf (__func__, b, len, AVF_ERR_FORMAT,
      "header length 11 runs past the end of the 16-byte file", 0);
  free (b);
}

static void
test_header_len_near_2_64 (void)
{
  size_t len;
  uint8_t *b = image_raw (0xFFFFFFFFFFFFFFF0ull, "{}      ", 8, NULL, 0,
      &len);
  expect_fail_buf (__func__, b, len, AVF_ERR_FORMAT,
      "header length 18446744073709551600 is larger than the limit", 0);
  free (b);
}

/* ------------------------------------------------------------------ */
/* UTF-8 and JSON syntax                                               */

static void
test_invalid_utf8_byte (void)
{
  expect_fail (__func__, "{\"a\xff\":1}", NULL, 0, AVF_ERR_FORMAT,
      "not valid UTF-8 (byte 0xff)", 8 + 3);
}

static void
test_invalid_utf8_overlong (void)
{
  /* C0 AF is an overlong '/', E0 80 AF another one. */
  expect_fail (__func__, "{\"\xc0\xaf\":1}", NULL, 0, AVF_ERR_FORMAT,
      "not valid UTF-8 (byte 0xc0)", 8 + 2);
  expect_fail (__func__, "{\"\xe0\x80\xaf\":1}", NULL, 0, AVF_ERR_FORMAT,
      "not valid UTF-8 (byte 0xe0)", 8 + 2);
}

static void
test_invalid_utf8_surrogate (void)
{
  /* ED A0 80 encodes U+D800. */
  expect_fail (__func__, "{\"\xed\xa0\x80\":1}", NULL, 0, AVF_ERR_FORMAT,
      "not valid UTF-8 (byte 0xed)", 8 + 2);
}

static void
test_invalid_utf8_above_f4 (void)
{
  expect_fail (__func__, "{\"\xf5\x80\x80\x80\":1}", NULL, 0,
      AVF_ERR_FORMAT, "not valid UTF-8 (byte 0xf5)", 8 + 2);
  /* F4 90 80 80 is U+110000. */
  expect_fail (__func__, "{\"\xf4\x90\x80\x80\":1}", NULL, 0,
      AVF_ERR_FORMAT, "not valid UTF-8 (byte 0xf4)", 8 + 2);
}

static void
test_invalid_utf8_truncated (void)
{
  expect_fail (__func__, "{}  \xe2\x82", NULL, 0, AVF_ERR_FORMAT,
      "not valid UTF-8 (byte 0xe2)", 8 + 4);
}

static void
test_not_json_text (void)
{
  expect_fail (__func__, "hello world", NULL, 0, AVF_ERR_FORMAT,
      "header is not a JSON object: it starts with 'h' instead of '{'", 8);
}

static void
test_not_json_broken_object (void)
{
  const char *h = "{\"a\" 1}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "expected ':' after an object key, found '1'", at (h, "1"));
}

static void
test_not_json_unterminated (void)
{
  expect_fail (__func__, "{\"a\":{\"dtype\":\"F32\"", NULL, 0,
      AVF_ERR_FORMAT, "unexpected end of the header inside an object",
      8 + 19);
}

static void
test_not_json_trailing_comma (void)
{
  const char *h = "{\"a\":[1,2,]}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "unexpected ']', expected a JSON value", at (h, "]"));
}

static void
test_not_json_single_quotes (void)
{
  const char *h = "{'a':1}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "expected a string key, found '''", 9);
}

static void
test_not_json_bad_literal (void)
{
  const char *h = "{\"__metadata__\":{\"a\":nul}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "invalid literal (expected null)", at (h, "nul"));
}

static void
test_not_json_leading_zero (void)
{
  const char *h = "{\"a\":{\"shape\":[01]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "invalid number (leading zero)", at (h, "01"));
}

static void
test_not_json_control_char_in_string (void)
{
  const char *h = "{\"a\tb\":1}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "control character 0x09 inside a string", 8 + 3);
}

static void
test_not_json_bad_escape (void)
{
  const char *h = "{\"a\\qb\":1}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "invalid escape \\'q' in a string", 8 + 3);
}

static void
test_not_json_bad_unicode_escape (void)
{
  const char *h = "{\"a\\u12g4\":1}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "invalid \\u escape (needs 4 hex digits)", 8 + 3);
}

static void
test_not_json_lone_high_surrogate (void)
{
  const char *h = "{\"a\\ud83dx\":1}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "high surrogate \\ud83d is not followed by a low surrogate", 8 + 3);
  expect_fail (__func__, "{\"\\ud83d\\u0041\":1}", NULL, 0, AVF_ERR_FORMAT,
      "high surrogate \\ud83d is not followed by a low surrogate", 8 + 2);
}

static void
test_not_json_lone_low_surrogate (void)
{
  expect_fail (__func__, "{\"\\ude00\":1}", NULL, 0, AVF_ERR_FORMAT,
      "unpaired low surrogate \\ude00", 8 + 2);
}

static void
test_not_object_array (void)
{
  expect_fail (__func__, "[1,2]", NULL, 0, AVF_ERR_FORMAT,
      "header is not a JSON object: it starts with '[' instead of '{'", 8);
}

static void
test_leading_whitespace (void)
{
  expect_fail (__func__, "  {}    ", NULL, 0, AVF_ERR_FORMAT,
      "header is not a JSON object: it starts with 0x20 instead of '{'", 8);
}

static void
test_trailing_garbage (void)
{
  const char *h = "{}  x   ";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "unexpected 'x' after the JSON object", 8 + 4);
  expect_fail (__func__, "{}{}", NULL, 0, AVF_ERR_FORMAT,
      "unexpected '{' after the JSON object", 8 + 2);
}

static void
test_trailing_nul_padding (void)
{
  size_t len;
  uint8_t *b = image_raw (8, "{}\0\0\0\0\0\0", 8, NULL, 0, &len);
  expect_fail_buf (__func__, b, len, AVF_ERR_FORMAT,
      "unexpected 0x00 after the JSON object", 8 + 2);
  free (b);
}

static void
test_deep_nesting (void)
{
  char h[1100];
  size_t n = 0;

  memcpy (h, "{\"a\":", 5);
  n = 5;
  for (int i = 0; i < 1000; i++)
    h[n++] = '[';
  h[n] = '\0';
  /* The root object is level 1; the 16th '[' is level 17. */
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "JSON nesting deeper than 16 levels", 8 + 5 + 15);
}

static void
test_nesting_at_limit_is_json (void)
{
  /* 15 nested arrays under the root (16 levels) are valid JSON; the error
   * is then about the tensor entry, not the nesting. */
  const char *h = "{\"a\":[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor \"a\" is not described by a JSON object", 8 + 5);
}

/* ------------------------------------------------------------------ */
/* Names and metadata                                                  */

static void
test_duplicate_tensor_names (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],"
      "\"data_offsets\":[0,2]},\"w\":{\"dtype\":\"U8\",\"shape\":[2],"
      "\"data_offsets\":[2,4]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "duplicate tensor name \"w\"", at (h, "},\"w\"") + 2);
}

static void
test_duplicate_tensor_names_escaped (void)
{
  /* "\u0077" is "w": the names are equal once decoded. */
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],"
      "\"data_offsets\":[0,2]},\"\\u0077\":{\"dtype\":\"U8\",\"shape\":[2],"
      "\"data_offsets\":[0,2]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "duplicate tensor name \"w\"", at (h, "\"\\u0077"));
}

static void
test_duplicate_metadata_keys (void)
{
  const char *h = "{\"__metadata__\":{\"k\":\"1\",\"j\":\"2\",\"k\":\"3\"}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "duplicate metadata key \"k\"", at (h, "\"k\":\"3"));
}

static void
test_duplicate_metadata_object (void)
{
  const char *h = "{\"__metadata__\":{},\"__metadata__\":{}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "duplicate key \"__metadata__\"", at (h, ",\"__") + 1);
}

static void
test_metadata_non_string_value (void)
{
  const char *h = "{\"__metadata__\":{\"ok\":\"x\",\"epochs\":3}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "metadata key \"epochs\" has a value that is not a string",
      at (h, "3"));
  expect_fail (__func__, "{\"__metadata__\":{\"n\":null}}", NULL, 0,
      AVF_ERR_FORMAT, "metadata key \"n\" has a value that is not a string",
      ANY_OFFSET);
  expect_fail (__func__, "{\"__metadata__\":{\"o\":{\"a\":\"b\"}}}", NULL, 0,
      AVF_ERR_FORMAT, "metadata key \"o\" has a value that is not a string",
      ANY_OFFSET);
}

static void
test_metadata_not_object (void)
{
  const char *h = "{\"__metadata__\":[\"a\"]}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "\"__metadata__\" is not a JSON object", at (h, "["));
  expect_fail (__func__, "{\"__metadata__\":null}", NULL, 0,
      AVF_ERR_FORMAT, "\"__metadata__\" is not a JSON object", ANY_OFFSET);
}

static void
test_nul_in_tensor_name (void)
{
  const char *h = "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],"
      "\"data_offsets\":[0,0]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor name \"a\" contains a NUL character", 8 + 1);
}

static void
test_long_name_is_shortened (void)
{
  char h[600];
  char name[301];
  AvfSafetensors *st = NULL;
  AvfError err;
  size_t len;
  uint8_t *b;

  memset (name, 'n', 300);
  name[300] = '\0';
  snprintf (h, sizeof h, "{\"%s\":{\"dtype\":\"Q8\",\"shape\":[],"
      "\"data_offsets\":[0,1]}}", name);
  b = image (h, zeros, 1, &len);
  AVF_CHECK (avf_safetensors_parse (&st, b, len, &err) == AVF_ERR_FORMAT,
      "%s", err.message);
  AVF_CHECK_CONTAINS (err.message, "nnnnnnnn...\" has an unknown dtype "
      "\"Q8\"");
  AVF_CHECK (strlen (err.message) < 200, "message of %zu bytes",
      strlen (err.message));
  free (b);
}

/* ------------------------------------------------------------------ */
/* Tensor entries                                                      */

static void
test_tensor_not_object (void)
{
  const char *h = "{\"w\":[0,4]}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor \"w\" is not described by a JSON object", at (h, "["));
}

static void
test_huge_number_in_shape (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[99999999999999999999],"
      "\"data_offsets\":[0,0]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor \"w\" has a number in \"shape\" that does not fit in 64 bits",
      at (h, "9999"));
}

static void
test_max_uint64_in_shape_fits (void)
{
  /* 18446744073709551615 fits; 18446744073709551616 does not. */
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[18446744073709551615,"
      "0],\"data_offsets\":[0,0]}}";
  AvfSafetensors *st = expect_ok (__func__, h, NULL, 0);
  const AvfTensorInfo *t = avf_safetensors_find (st, "w");
  AVF_CHECK (t != NULL && t->shape[0] == UINT64_MAX && t->numel == 0,
      "shape not read");
  avf_safetensors_free (st);
  h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616,0],"
      "\"data_offsets\":[0,0]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "does not fit in 64 bits", at (h, "1844"));
}

static void
test_huge_number_in_offsets (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[0],"
      "\"data_offsets\":[0,123456789012345678901234567890]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor \"w\" has a number in \"data_offsets\" that does not fit in "
      "64 bits", at (h, "1234"));
}

static void
test_negative_number_in_shape (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2,-1],"
      "\"data_offsets\":[0,2]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "tensor \"w\" has a negative number in \"shape\"", at (h, "-1"));
  expect_fail (__func__, "{\"w\":{\"dtype\":\"U8\",\"shape\":[-0],"
      "\"data_offsets\":[0,0]}}", NULL, 0, AVF_ERR_FORMAT,
      "negative number in \"shape\"", ANY_OFFSET);
}

static void
test_negative_offset (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],"
      "\"data_offsets\":[-2,0]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "tensor \"w\" has a negative number in \"data_offsets\"", at (h, "-2"));
}

static void
test_fraction_in_shape (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2.0],"
      "\"data_offsets\":[0,2]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "tensor \"w\" has a non-integer number in \"shape\"", at (h, "2.0"));
}

static void
test_exponent_in_offsets (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],"
      "\"data_offsets\":[0,2e0]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "tensor \"w\" has a non-integer number in \"data_offsets\"",
      at (h, "2e0"));
}

static void
test_string_in_shape (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[\"2\"],"
      "\"data_offsets\":[0,2]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "tensor \"w\" has a value in \"shape\" that is not a number",
      at (h, "\"2\""));
}

static void
test_shape_not_array (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":2,"
      "\"data_offsets\":[0,2]}}";
  expect_fail (__func__, h, zeros, 2, AVF_ERR_FORMAT,
      "tensor \"w\" has a \"shape\" that is not an array", at (h, "2,"));
}

static void
test_unknown_dtype (void)
{
  const char *h = "{\"w\":{\"dtype\":\"F128\",\"shape\":[1],"
      "\"data_offsets\":[0,16]}}";
  expect_fail (__func__, h, zeros, 16, AVF_ERR_FORMAT,
      "tensor \"w\" has an unknown dtype \"F128\"", at (h, "\"F128"));
  /* Case matters, as in the reference. */
  expect_fail (__func__, "{\"w\":{\"dtype\":\"f32\",\"shape\":[1],"
      "\"data_offsets\":[0,4]}}", zeros, 4, AVF_ERR_FORMAT,
      "unknown dtype \"f32\"", ANY_OFFSET);
}

static void
test_dtype_not_string (void)
{
  const char *h = "{\"w\":{\"dtype\":4,\"shape\":[1],"
      "\"data_offsets\":[0,4]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has a \"dtype\" that is not a string", at (h, "4,"));
}

static void
test_missing_dtype (void)
{
  const char *h = "{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has no \"dtype\" field", 8 + 5);
}

static void
test_missing_shape (void)
{
  const char *h = "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has no \"shape\" field", 8 + 5);
}

static void
test_missing_data_offsets (void)
{
  const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has no \"data_offsets\" field", 8 + 5);
}

static void
test_extra_field (void)
{
  const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
      "\"data_offsets\":[0,4],\"stride\":[1]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has an unexpected field \"stride\"", at (h, "\"stride"));
}

static void
test_duplicate_field_in_entry (void)
{
  const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
      "\"dtype\":\"F32\",\"data_offsets\":[0,4]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has a duplicate key \"dtype\"", at (h, ",\"dtype") + 1);
}

static void
test_too_many_dims (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],"
      "\"data_offsets\":[0,1]}}";
  expect_fail (__func__, h, zeros, 1, AVF_ERR_FORMAT,
      "tensor \"w\" has more than 8 dimensions in \"shape\"",
      at (h, "1],"));
}

static void
test_eight_dims_ok (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,2],"
      "\"data_offsets\":[0,2]}}";
  AvfSafetensors *st = expect_ok (__func__, h, zeros, 2);
  const AvfTensorInfo *t = avf_safetensors_tensor (st, 0);
  AVF_CHECK (t != NULL && t->ndim == 8 && t->shape[7] == 2 && t->numel == 2,
      "8-d shape not read");
  avf_safetensors_free (st);
}

static void
test_three_data_offsets (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],"
      "\"data_offsets\":[0,1,2]}}";
  expect_fail (__func__, h, zeros, 1, AVF_ERR_FORMAT,
      "tensor \"w\" has more than 2 values in \"data_offsets\"",
      at (h, "2]"));
}

static void
test_one_data_offset (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],"
      "\"data_offsets\":[0]}}";
  expect_fail (__func__, h, zeros, 1, AVF_ERR_FORMAT,
      "tensor \"w\" has 1 value in \"data_offsets\" instead of 2",
      at (h, "[0]"));
}

static void
test_begin_after_end (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[4,0]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"w\" has data_offsets [4, 0] whose begin is after its end",
      at (h, "[4,0]"));
}

static void
test_nbytes_mismatch (void)
{
  const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],"
      "\"data_offsets\":[0,20]}}";
  expect_fail (__func__, h, zeros, 20, AVF_ERR_FORMAT,
      "tensor \"w\" needs 24 bytes (6 elements of F32) but its data_offsets "
      "[0, 20] span 20 bytes", at (h, "[0,20]"));
}

static void
test_numel_overflow (void)
{
  const char *h = "{\"w\":{\"dtype\":\"U8\",\"shape\":[4294967296,"
      "4294967296,16],\"data_offsets\":[0,0]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor \"w\" has more elements than fit in 64 bits", 8 + 5);
}

static void
test_shape_times_dtype_overflow (void)
{
  /* 2^62 elements fit, 2^62 x 8 bytes do not. */
  const char *h = "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,"
      "1073741824],\"data_offsets\":[0,0]}}";
  expect_fail (__func__, h, NULL, 0, AVF_ERR_FORMAT,
      "tensor \"w\" (4611686018427387904 elements of F64) has a byte size "
      "that does not fit in 64 bits", 8 + 5);
}

/* ------------------------------------------------------------------ */
/* Offsets                                                             */

static void
test_gap_between_tensors (void)
{
  const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[8,12]}}";
  int64_t data = 8 + (int64_t) strlen (h);
  expect_fail (__func__, h, zeros, 12, AVF_ERR_FORMAT,
      "gap of 4 bytes between tensor \"a\" (data offsets [0, 4]) and tensor "
      "\"b\" (data offsets [8, 12])", data + 4);
}

static void
test_overlapping_tensors (void)
{
  const char *h = "{\"b\":{\"dtype\":\"U8\",\"shape\":[8],"
      "\"data_offsets\":[4,12]},\"a\":{\"dtype\":\"U8\",\"shape\":[8],"
      "\"data_offsets\":[0,8]}}";
  int64_t data = 8 + (int64_t) strlen (h);
  expect_fail (__func__, h, zeros, 12, AVF_ERR_FORMAT,
      "tensor \"b\" (data offsets [4, 12]) overlaps tensor \"a\" (data "
      "offsets [0, 8])", data + 4);
}

static void
test_same_range_twice (void)
{
  const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[0,4]}}";
  expect_fail (__func__, h, zeros, 4, AVF_ERR_FORMAT,
      "tensor \"b\" (data offsets [0, 4]) overlaps tensor \"a\"", ANY_OFFSET);
}

static void
test_first_offset_not_zero (void)
{
  const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[4,8]}}";
  int64_t data = 8 + (int64_t) strlen (h);
  expect_fail (__func__, h, zeros, 8, AVF_ERR_FORMAT,
      "the first tensor \"a\" starts at data offset 4 instead of 0", data);
}

static void
test_data_after_last_tensor (void)
{
  const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[0,4]}}";
  int64_t data = 8 + (int64_t) strlen (h);
  expect_fail (__func__, h, zeros, 7, AVF_ERR_FORMAT,
      "3 bytes of data after the last tensor \"a\"", data + 4);
}

static void
test_data_without_tensors (void)
{
  expect_fail (__func__, "{}      ", zeros, 8, AVF_ERR_FORMAT,
      "8 bytes of data after the header of a file without tensors", 16);
}

static void
test_end_past_eof (void)
{
  const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[4],"
      "\"data_offsets\":[4,20]}}";
  int64_t data = 8 + (int64_t) strlen (h);
  expect_fail (__func__, h, zeros, 10, AVF_ERR_FORMAT,
      "tensor \"b\" ends at data offset 20, past the end of the file (the "
      "data area has 10 bytes)", data + 10);
}

static void
test_end_near_2_64 (void)
{
  /* begin/end near 2^64 with a matching byte count: no wrap-around. */
  const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[16],"
      "\"data_offsets\":[18446744073709551599,18446744073709551615]}}";
  expect_fail (__func__, h, zeros, 16, AVF_ERR_FORMAT,
      "the first tensor \"a\" starts at data offset 18446744073709551599",
      ANY_OFFSET);
}

/* ------------------------------------------------------------------ */
/* Valid files                                                         */

static void
test_valid_two_tensors_with_metadata (void)
{
  /* bias is listed first but stored second: the table is in data order. */
  const char *h = "{\"__metadata__\":{\"format\":\"pt\",\"note\":"
      "\"a \\\"quoted\\\" \\u00e9 value\"},"
      "\"bias\":{\"dtype\":\"I16\",\"shape\":[3],\"data_offsets\":[24,30]},"
      "\"weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
      "\"data_offsets\":[0,24]}}  ";
  float w[6] = { 0.5f, -1.0f, 2.0f, 3.25f, -0.125f, 100.0f };
  int16_t b[3] = { -7, 0, 12345 };
  uint8_t data[30];
  AvfSafetensors *st;
  const AvfTensorInfo *t;
  const AvfMetadataEntry *m;
  float wr[6];
  int16_t br[3];

  memcpy (data, w, 24);         /* the host is little-endian */
  memcpy (data + 24, b, 6);
  st = expect_ok (__func__, h, data, sizeof data);
  if (st == NULL)
    return;
  AVF_CHECK (avf_safetensors_count (st) == 2, "count %zu",
      avf_safetensors_count (st));
  t = avf_safetensors_tensor (st, 0);
  AVF_CHECK (t != NULL && strcmp (t->name, "weight") == 0, "first tensor");
  AVF_CHECK (t->dtype == AVF_DTYPE_F32 && t->ndim == 2 && t->shape[0] == 2
      && t->shape[1] == 3 && t->numel == 6 && t->begin == 0 && t->end == 24,
      "weight info");
  memcpy (wr, t->data, sizeof wr);
  AVF_CHECK (memcmp (wr, w, sizeof w) == 0, "weight values");
  t = avf_safetensors_find (st, "bias");
  AVF_CHECK (t != NULL && t == avf_safetensors_tensor (st, 1), "find bias");
  AVF_CHECK (t->dtype == AVF_DTYPE_I16 && t->ndim == 1 && t->shape[0] == 3
      && t->numel == 3 && t->begin == 24 && t->end == 30, "bias info");
  memcpy (br, t->data, sizeof br);
  AVF_CHECK (memcmp (br, b, sizeof b) == 0, "bias values");
  AVF_CHECK (avf_safetensors_find (st, "weigh") == NULL, "prefix found");
  AVF_CHECK (avf_safetensors_find (st, "missing") == NULL, "missing found");
  AVF_CHECK (avf_safetensors_find (st, "__metadata__") == NULL,
      "__metadata__ is a tensor");
  AVF_CHECK (avf_safetensors_tensor (st, 2) == NULL, "index 2");

  AVF_CHECK (avf_safetensors_metadata_count (st) == 2, "metadata count");
  m = avf_safetensors_metadata_entry (st, 0);
  AVF_CHECK (m != NULL && strcmp (m->key, "format") == 0
      && strcmp (m->value, "pt") == 0, "metadata entry 0");
  m = avf_safetensors_metadata_entry (st, 1);
  AVF_CHECK (m != NULL && strcmp (m->key, "note") == 0, "metadata entry 1");
  AVF_CHECK (avf_safetensors_metadata_entry (st, 2) == NULL, "entry 2");
  AVF_CHECK (strcmp (avf_safetensors_metadata (st, "format"), "pt") == 0,
      "format");
  AVF_CHECK (strcmp (avf_safetensors_metadata (st, "note"),
          "a \"quoted\" \xc3\xa9 value") == 0, "note: %s",
      avf_safetensors_metadata (st, "note"));
  AVF_CHECK (avf_safetensors_metadata (st, "nope") == NULL, "nope");
  avf_safetensors_free (st);
}

static void
test_valid_pretty_printed (void)
{
  /* Any JSON whitespace between tokens, tabs and newlines at the end. */
  const char *h = "{\n  \"a\" : {\r\n\t\"shape\" : [ 2 ] ,\n"
      "    \"data_offsets\" : [ 0 , 2 ],  \"dtype\" : \"U8\"\n  }\n}\n\t ";
  AvfSafetensors *st = expect_ok (__func__, h, "\x01\x02", 2);
  const AvfTensorInfo *t = avf_safetensors_find (st, "a");
  AVF_CHECK (t != NULL && t->data[0] == 1 && t->data[1] == 2, "data");
  avf_safetensors_free (st);
}

static void
test_valid_escaped_names (void)
{
  /* \u00e9, a surrogate pair (U+1F600), \/ and a raw UTF-8 name. */
  const char *h = "{\"caf\\u00e9\\ud83d\\ude00\\/x\":{\"dtype\":\"U8\","
      "\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"\xe2\x82\xac\":{\"dtype\":\"BOOL\",\"shape\":[1],"
      "\"data_offsets\":[1,2]}}";
  AvfSafetensors *st = expect_ok (__func__, h, zeros, 2);
  AVF_CHECK (avf_safetensors_find (st,
          "caf\xc3\xa9\xf0\x9f\x98\x80/x") != NULL, "escaped name");
  AVF_CHECK (avf_safetensors_find (st, "\xe2\x82\xac") != NULL, "euro");
  avf_safetensors_free (st);
}

static void
test_empty_tensor (void)
{
  /* A zero-size tensor between two others, and one at the very end. */
  const char *h = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
      "\"data_offsets\":[0,4]},\"e\":{\"dtype\":\"F32\",\"shape\":[0],"
      "\"data_offsets\":[4,4]},\"z\":{\"dtype\":\"F16\",\"shape\":[3,0,2],"
      "\"data_offsets\":[8,8]},\"b\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[4,8]}}";
  AvfSafetensors *st = expect_ok (__func__, h, zeros, 8);
  const AvfTensorInfo *e, *z;

  if (st == NULL)
    return;
  AVF_CHECK (avf_safetensors_count (st) == 4, "count");
  e = avf_safetensors_find (st, "e");
  z = avf_safetensors_find (st, "z");
  AVF_CHECK (e != NULL && e->numel == 0 && e->begin == 4 && e->end == 4,
      "empty e");
  AVF_CHECK (z != NULL && z->numel == 0 && z->ndim == 3, "empty z");
  AVF_CHECK (avf_safetensors_tensor (st, 3) == z, "z last");
  avf_safetensors_free (st);
}

static void
test_only_empty_tensor (void)
{
  AvfSafetensors *st = expect_ok (__func__, "{\"e\":{\"dtype\":\"U8\","
      "\"shape\":[0],\"data_offsets\":[0,0]}}", NULL, 0);
  AVF_CHECK (avf_safetensors_count (st) == 1, "count");
  avf_safetensors_free (st);
}

static void
test_scalar_tensor (void)
{
  double v = 2.5, r;
  AvfSafetensors *st = expect_ok (__func__, "{\"s\":{\"dtype\":\"F64\","
      "\"shape\":[],\"data_offsets\":[0,8]}}", &v, 8);
  const AvfTensorInfo *t = avf_safetensors_find (st, "s");
  AVF_CHECK (t != NULL && t->ndim == 0 && t->numel == 1, "scalar");
  if (t != NULL) {
    memcpy (&r, t->data, 8);
    AVF_CHECK (r == 2.5, "value %g", r);
  }
  avf_safetensors_free (st);
}

static void
test_zero_tensors (void)
{
  AvfSafetensors *st = expect_ok (__func__, "{}      ", NULL, 0);
  AVF_CHECK (st != NULL && avf_safetensors_count (st) == 0, "count");
  AVF_CHECK (avf_safetensors_find (st, "a") == NULL, "find");
  AVF_CHECK (avf_safetensors_metadata_count (st) == 0, "metadata");
  avf_safetensors_free (st);
  st = expect_ok (__func__, "{\"__metadata__\":{\"k\":\"v\"}}", NULL, 0);
  AVF_CHECK (st != NULL && avf_safetensors_count (st) == 0
      && strcmp (avf_safetensors_metadata (st, "k"), "v") == 0, "metadata");
  avf_safetensors_free (st);
}

static void
test_all_dtypes (void)
{
  static const struct {
    const char *name;
    AvfDtype dtype;
    size_t size;
  } d[] = {
    {"BOOL", AVF_DTYPE_BOOL, 1}, {"U8", AVF_DTYPE_U8, 1},
    {"I8", AVF_DTYPE_I8, 1}, {"F8_E5M2", AVF_DTYPE_F8_E5M2, 1},
    {"F8_E4M3", AVF_DTYPE_F8_E4M3, 1}, {"I16", AVF_DTYPE_I16, 2},
    {"U16", AVF_DTYPE_U16, 2}, {"F16", AVF_DTYPE_F16, 2},
    {"BF16", AVF_DTYPE_BF16, 2}, {"I32", AVF_DTYPE_I32, 4},
    {"U32", AVF_DTYPE_U32, 4}, {"F32", AVF_DTYPE_F32, 4},
    {"F64", AVF_DTYPE_F64, 8}, {"I64", AVF_DTYPE_I64, 8},
    {"U64", AVF_DTYPE_U64, 8},
  };

  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    char h[200];
    AvfSafetensors *st;
    const AvfTensorInfo *t;

    AVF_CHECK (strcmp (avf_dtype_name (d[i].dtype), d[i].name) == 0,
        "name of %s", d[i].name);
    AVF_CHECK (avf_dtype_size (d[i].dtype) == d[i].size, "size of %s",
        d[i].name);
    snprintf (h, sizeof h, "{\"t\":{\"dtype\":\"%s\",\"shape\":[3],"
        "\"data_offsets\":[0,%zu]}}", d[i].name, 3 * d[i].size);
    st = expect_ok (d[i].name, h, zeros, 3 * d[i].size);
    t = avf_safetensors_find (st, "t");
    AVF_CHECK (t != NULL && t->dtype == d[i].dtype, "dtype %s", d[i].name);
    avf_safetensors_free (st);
  }
  AVF_CHECK (avf_dtype_size ((AvfDtype) 99) == 0, "invalid size");
  AVF_CHECK (avf_dtype_name ((AvfDtype) 99) != NULL, "invalid name");
}

static void
test_free_null_and_null_args (void)
{
  AvfError err;
  AvfSafetensors *st = NULL;

  avf_safetensors_free (NULL);
  AVF_CHECK (avf_safetensors_count (NULL) == 0, "count");
  AVF_CHECK (avf_safetensors_find (NULL, "a") == NULL, "find");
  AVF_CHECK (avf_safetensors_metadata (NULL, "a") == NULL, "metadata");
  AVF_CHECK (avf_safetensors_parse (NULL, zeros, 8, &err) ==
      AVF_ERR_INVALID, "NULL out");
  AVF_CHECK (avf_safetensors_parse (&st, NULL, 8, &err) == AVF_ERR_INVALID,
      "NULL buffer");
  /* A NULL error record is allowed. */
  AVF_CHECK (avf_safetensors_parse (&st, zeros, 3, NULL) == AVF_ERR_FORMAT,
      "NULL err");
  AVF_CHECK (st == NULL, "st");
}

/* ------------------------------------------------------------------ */
/* Robustness loops                                                    */

static uint8_t *
sample_image (size_t * len)
{
  const char *h = "{\"__metadata__\":{\"format\":\"pt\",\"k\\u00e9\":\"v\"},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
      "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[16,20]},"
      "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[20,20]}}    ";
  uint8_t data[20];

  for (int i = 0; i < 20; i++)
    data[i] = (uint8_t) (i * 7);
  return image (h, data, sizeof data, len);
}

static void
test_every_prefix_fails (void)
{
  size_t len;
  uint8_t *full = sample_image (&len);
  AvfSafetensors *st = NULL;
  AvfError err;

  AVF_CHECK (avf_safetensors_parse (&st, full, len, &err) == AVF_OK,
      "sample: %s", err.message);
  avf_safetensors_free (st);
  for (size_t n = 0; n < len; n++) {
    /* A copy of exactly n bytes, so ASan sees any read past the end. */
    uint8_t *p = malloc (n > 0 ? n : 1);
    AvfStatus s;
    memcpy (p, full, n);
    st = NULL;
    avf_error_clear (&err);
    s = avf_safetensors_parse (&st, p, n, &err);
    AVF_CHECK (s == AVF_ERR_FORMAT && st == NULL && err.message[0] != '\0',
        "prefix %zu: status %d", n, (int) s);
    free (p);
  }
  free (full);
}

static void
test_byte_flips_do_not_crash (void)
{
  size_t len, n_ok = 0, n_fail = 0;
  uint8_t *img = sample_image (&len);
  uint64_t header_len = 0;

  for (int i = 7; i >= 0; i--)
    header_len = (header_len << 8) | img[i];
  for (size_t pos = 0; pos < 8 + header_len; pos++) {
    uint8_t orig = img[pos];
    for (int v = 0; v < 256; v++) {
      AvfSafetensors *st = NULL;
      AvfError err;
      AvfStatus s;
      if (v == orig)
        continue;
      img[pos] = (uint8_t) v;
      s = avf_safetensors_parse (&st, img, len, &err);
      if (s == AVF_OK) {
        /* Whatever parsed must be self-consistent. */
        for (size_t i = 0; i < avf_safetensors_count (st); i++) {
          const AvfTensorInfo *t = avf_safetensors_tensor (st, i);
          AVF_CHECK (t->end >= t->begin && t->end <= len, "bounds");
          AVF_CHECK (avf_safetensors_find (st, t->name) == t, "find");
        }
        avf_safetensors_free (st);
        n_ok++;
      } else {
        AVF_CHECK (s == AVF_ERR_FORMAT && st == NULL, "pos %zu value %d: "
            "status %d", pos, v, (int) s);
        n_fail++;
      }
    }
    img[pos] = orig;
  }
  AVF_CHECK (n_fail > 0 && n_ok > 0, "%zu ok, %zu failed", n_ok, n_fail);
  free (img);
}

/* ------------------------------------------------------------------ */
/* Files                                                               */

typedef struct {
  char dir[256];
  char path[320];
} TmpDir;

static int
tmp_dir_make (TmpDir * t, const char *file)
{
  char *made = avf_tmp_dir_new ("avf-safetensors");

  snprintf (t->dir, sizeof t->dir, "%s", made);
  free (made);
  snprintf (t->path, sizeof t->path, "%s/%s", t->dir, file);
  return 1;
}

static void
test_write_read_round_trip (void)
{
  static const char weird[] = "enc.\"q\"\\b\n\t\x01 caf\xc3\xa9/x";
  float w[4] = { 1.0f, -2.0f, 3.5f, 1e-30f };
  uint8_t u[3] = { 7, 8, 9 };
  double s = -0.75;
  AvfTensorOut out[4] = {
    {.name = weird,.dtype = AVF_DTYPE_F32,.ndim = 2,.shape = {2, 2},.data = w},
    {.name = "u",.dtype = AVF_DTYPE_U8,.ndim = 1,.shape = {3},.data = u},
    {.name = "empty",.dtype = AVF_DTYPE_F16,.ndim = 2,.shape = {0, 4}},
    {.name = "scalar",.dtype = AVF_DTYPE_F64,.ndim = 0,.data = &s},
  };
  AvfMetadataEntry meta[2] = {
    {"format", "pt"},
    {"quote\"d", "line\nbreak \\ \xe2\x82\xac"},
  };
  AvfSafetensors *st = NULL;
  AvfError err;
  TmpDir td;
  char tmp_path[336];
  struct stat sb;
  const AvfTensorInfo *t;
  FILE *f;
  uint8_t head[8];
  uint64_t n = 0;

  if (!tmp_dir_make (&td, "model.safetensors"))
    return;
  AVF_CHECK (avf_safetensors_write (td.path, out, 4, meta, 2, &err) ==
      AVF_OK, "write: %s", err.message);
  snprintf (tmp_path, sizeof tmp_path, "%s.tmp", td.path);
  AVF_CHECK (stat (tmp_path, &sb) != 0, "temporary file left behind");

  f = fopen (td.path, "rb");
  AVF_CHECK (f != NULL && fread (head, 1, 8, f) == 8, "read back");
  if (f != NULL)
    fclose (f);
  for (int i = 7; i >= 0; i--)
    n = (n << 8) | head[i];
  AVF_CHECK ((8 + n) % 8 == 0, "header length %llu not padded",
      (unsigned long long) n);
  AVF_CHECK (stat (td.path, &sb) == 0
      && (uint64_t) sb.st_size == 8 + n + 16 + 3 + 8, "file size");

  AVF_CHECK (avf_safetensors_open (&st, td.path, &err) == AVF_OK,
      "open: %s", err.message);
  if (st != NULL) {
    AVF_CHECK (avf_safetensors_count (st) == 4, "count");
    t = avf_safetensors_find (st, weird);
    AVF_CHECK (t != NULL && t == avf_safetensors_tensor (st, 0)
        && t->dtype == AVF_DTYPE_F32 && t->ndim == 2 && t->shape[1] == 2
        && memcmp (t->data, w, sizeof w) == 0, "weird tensor");
    t = avf_safetensors_find (st, "u");
    AVF_CHECK (t != NULL && t->begin == 16 && t->end == 19
        && memcmp (t->data, u, 3) == 0, "u");
    t = avf_safetensors_find (st, "empty");
    AVF_CHECK (t != NULL && t->numel == 0 && t->begin == 19
        && t->end == 19, "empty");
    t = avf_safetensors_find (st, "scalar");
    AVF_CHECK (t != NULL && t->ndim == 0 && t->numel == 1
        && memcmp (t->data, &s, 8) == 0, "scalar");
    AVF_CHECK (avf_safetensors_metadata_count (st) == 2, "metadata count");
    AVF_CHECK (strcmp (avf_safetensors_metadata_entry (st, 0)->key,
            "format") == 0, "metadata order");
    AVF_CHECK (strcmp (avf_safetensors_metadata (st, "quote\"d"),
            meta[1].value) == 0, "metadata value");
    avf_safetensors_free (st);
  }

  /* Overwriting an existing file works the same way. */
  AVF_CHECK (avf_safetensors_write (td.path, out + 1, 1, NULL, 0, &err) ==
      AVF_OK, "rewrite: %s", err.message);
  st = NULL;
  AVF_CHECK (avf_safetensors_open (&st, td.path, &err) == AVF_OK
      && avf_safetensors_count (st) == 1
      && avf_safetensors_metadata_count (st) == 0, "reopen: %s",
      err.message);
  avf_safetensors_free (st);

  /* No tensors at all: "{}" padded to 8 bytes. */
  AVF_CHECK (avf_safetensors_write (td.path, NULL, 0, NULL, 0, &err) ==
      AVF_OK, "write empty: %s", err.message);
  AVF_CHECK (stat (td.path, &sb) == 0 && sb.st_size == 16, "empty size");
  st = NULL;
  AVF_CHECK (avf_safetensors_open (&st, td.path, &err) == AVF_OK
      && avf_safetensors_count (st) == 0, "open empty: %s", err.message);
  avf_safetensors_free (st);

  remove (td.path);
  AVF_CHECK (rmdir (td.dir) == 0, "rmdir %s: %s", td.dir, strerror (errno));
}

static void
test_write_rejects_bad_input (void)
{
  uint8_t u[4] = { 0 };
  AvfTensorOut out[2] = {
    {.name = "a",.dtype = AVF_DTYPE_U8,.ndim = 1,.shape = {4},.data = u},
    {.name = "a",.dtype = AVF_DTYPE_U8,.ndim = 1,.shape = {4},.data = u},
  };
  AvfMetadataEntry meta[2] = { {"k", "1"}, {"k", "2"} };
  AvfError err;
  TmpDir td;
  struct stat sb;

  if (!tmp_dir_make (&td, "bad.safetensors"))
    return;
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "duplicate names");
  AVF_CHECK_CONTAINS (err.message, "duplicate tensor name \"a\"");
  AVF_CHECK (avf_safetensors_write (td.path, out, 1, meta, 2, &err) ==
      AVF_ERR_INVALID, "duplicate metadata");
  AVF_CHECK_CONTAINS (err.message, "duplicate metadata key \"k\"");
  out[1].name = "b";
  out[1].data = NULL;
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "NULL data");
  AVF_CHECK_CONTAINS (err.message, "tensor \"b\" has no data for its 4 bytes");
  out[1].data = u;
  out[1].dtype = (AvfDtype) 42;
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "bad dtype");
  AVF_CHECK_CONTAINS (err.message, "tensor \"b\" has an invalid dtype 42");
  out[1].dtype = AVF_DTYPE_U64;
  out[1].ndim = 3;
  out[1].shape[0] = out[1].shape[1] = 1ull << 30;
  out[1].shape[2] = 8;           /* 2^63 elements fit, 2^66 bytes do not */
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "overflow");
  AVF_CHECK_CONTAINS (err.message, "tensor \"b\" is too large to write");
  out[1].ndim = 9;
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "ndim");
  out[1].ndim = 1;
  out[1].shape[0] = 4;
  out[1].name = "bad\xff";
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "invalid UTF-8 name");
  AVF_CHECK_CONTAINS (err.message, "not valid UTF-8");
  out[1].name = "__metadata__";
  AVF_CHECK (avf_safetensors_write (td.path, out, 2, NULL, 0, &err) ==
      AVF_ERR_INVALID, "reserved name");
  AVF_CHECK (stat (td.path, &sb) != 0, "a file was written");
  AVF_CHECK (rmdir (td.dir) == 0, "rmdir %s: %s", td.dir, strerror (errno));
}

static void
test_write_to_missing_dir (void)
{
  uint8_t u[1] = { 0 };
  AvfTensorOut out = {.name = "a",.dtype = AVF_DTYPE_U8,.ndim = 1,
    .shape = {1},.data = u
  };
  AvfError err;

  AVF_CHECK (avf_safetensors_write ("/nonexistent-avf-dir/x.safetensors",
          &out, 1, NULL, 0, &err) == AVF_ERR_IO, "status %d", err.status);
  AVF_CHECK_CONTAINS (err.message, "cannot create "
      "\"/nonexistent-avf-dir/x.safetensors.tmp\"");
}

static void
test_open_missing_file (void)
{
  AvfSafetensors *st = (AvfSafetensors *) & st;
  AvfError err;
  TmpDir td;

  if (!tmp_dir_make (&td, "missing.safetensors"))
    return;
  AVF_CHECK (avf_safetensors_open (&st, td.path, &err) == AVF_ERR_NOT_FOUND,
      "status %d: %s", err.status, err.message);
  AVF_CHECK (st == NULL, "st not reset");
  AVF_CHECK_CONTAINS (err.message, td.path);
  AVF_CHECK_CONTAINS (err.message, strerror (ENOENT));
  AVF_CHECK (rmdir (td.dir) == 0, "rmdir");
}

static void
test_open_directory (void)
{
  AvfSafetensors *st = NULL;
  AvfError err;

  AVF_CHECK (avf_safetensors_open (&st, "/tmp", &err) == AVF_ERR_IO,
      "status %d: %s", err.status, err.message);
  AVF_CHECK_CONTAINS (err.message, "is not a regular file");
}

static void
test_open_malformed_file (void)
{
  AvfSafetensors *st = NULL;
  AvfError err;
  TmpDir td;
  FILE *f;
  size_t len;
  uint8_t *b = image ("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],"
      "\"data_offsets\":[0,4]}}", zeros, 3, &len);

  if (!tmp_dir_make (&td, "short.safetensors")) {
    free (b);
    return;
  }
  f = fopen (td.path, "wb");
  AVF_CHECK (f != NULL && fwrite (b, 1, len, f) == len, "write");
  if (f != NULL)
    fclose (f);
  AVF_CHECK (avf_safetensors_open (&st, td.path, &err) == AVF_ERR_FORMAT,
      "status %d", err.status);
  AVF_CHECK_CONTAINS (err.message, "tensor \"a\" ends at data offset 4, "
      "past the end of the file");
  AVF_CHECK (st == NULL, "st");
  free (b);
  remove (td.path);
  AVF_CHECK (rmdir (td.dir) == 0, "rmdir");
}

AVF_TEST_MAIN (AVF_TEST (test_shorter_than_8_bytes),
    AVF_TEST (test_header_len_zero),
    AVF_TEST (test_header_len_over_100mb),
    AVF_TEST (test_header_len_past_eof),
    AVF_TEST (test_header_len_near_2_64),
    AVF_TEST (test_invalid_utf8_byte),
    AVF_TEST (test_invalid_utf8_overlong),
    AVF_TEST (test_invalid_utf8_surrogate),
    AVF_TEST (test_invalid_utf8_above_f4),
    AVF_TEST (test_invalid_utf8_truncated),
    AVF_TEST (test_not_json_text),
    AVF_TEST (test_not_json_broken_object),
    AVF_TEST (test_not_json_unterminated),
    AVF_TEST (test_not_json_trailing_comma),
    AVF_TEST (test_not_json_single_quotes),
    AVF_TEST (test_not_json_bad_literal),
    AVF_TEST (test_not_json_leading_zero),
    AVF_TEST (test_not_json_control_char_in_string),
    AVF_TEST (test_not_json_bad_escape),
    AVF_TEST (test_not_json_bad_unicode_escape),
    AVF_TEST (test_not_json_lone_high_surrogate),
    AVF_TEST (test_not_json_lone_low_surrogate),
    AVF_TEST (test_not_object_array),
    AVF_TEST (test_leading_whitespace),
    AVF_TEST (test_trailing_garbage),
    AVF_TEST (test_trailing_nul_padding),
    AVF_TEST (test_deep_nesting),
    AVF_TEST (test_nesting_at_limit_is_json),
    AVF_TEST (test_duplicate_tensor_names),
    AVF_TEST (test_duplicate_tensor_names_escaped),
    AVF_TEST (test_duplicate_metadata_keys),
    AVF_TEST (test_duplicate_metadata_object),
    AVF_TEST (test_metadata_non_string_value),
    AVF_TEST (test_metadata_not_object),
    AVF_TEST (test_nul_in_tensor_name),
    AVF_TEST (test_long_name_is_shortened),
    AVF_TEST (test_tensor_not_object),
    AVF_TEST (test_huge_number_in_shape),
    AVF_TEST (test_max_uint64_in_shape_fits),
    AVF_TEST (test_huge_number_in_offsets),
    AVF_TEST (test_negative_number_in_shape),
    AVF_TEST (test_negative_offset),
    AVF_TEST (test_fraction_in_shape),
    AVF_TEST (test_exponent_in_offsets),
    AVF_TEST (test_string_in_shape),
    AVF_TEST (test_shape_not_array),
    AVF_TEST (test_unknown_dtype),
    AVF_TEST (test_dtype_not_string),
    AVF_TEST (test_missing_dtype),
    AVF_TEST (test_missing_shape),
    AVF_TEST (test_missing_data_offsets),
    AVF_TEST (test_extra_field),
    AVF_TEST (test_duplicate_field_in_entry),
    AVF_TEST (test_too_many_dims),
    AVF_TEST (test_eight_dims_ok),
    AVF_TEST (test_three_data_offsets),
    AVF_TEST (test_one_data_offset),
    AVF_TEST (test_begin_after_end),
    AVF_TEST (test_nbytes_mismatch),
    AVF_TEST (test_numel_overflow),
    AVF_TEST (test_shape_times_dtype_overflow),
    AVF_TEST (test_gap_between_tensors),
    AVF_TEST (test_overlapping_tensors),
    AVF_TEST (test_same_range_twice),
    AVF_TEST (test_first_offset_not_zero),
    AVF_TEST (test_data_after_last_tensor),
    AVF_TEST (test_data_without_tensors),
    AVF_TEST (test_end_past_eof),
    AVF_TEST (test_end_near_2_64),
    AVF_TEST (test_valid_two_tensors_with_metadata),
    AVF_TEST (test_valid_pretty_printed),
    AVF_TEST (test_valid_escaped_names),
    AVF_TEST (test_empty_tensor),
    AVF_TEST (test_only_empty_tensor),
    AVF_TEST (test_scalar_tensor),
    AVF_TEST (test_zero_tensors),
    AVF_TEST (test_all_dtypes),
    AVF_TEST (test_free_null_and_null_args),
    AVF_TEST (test_every_prefix_fails),
    AVF_TEST (test_byte_flips_do_not_crash),
    AVF_TEST (test_write_read_round_trip),
    AVF_TEST (test_write_rejects_bad_input),
    AVF_TEST (test_write_to_missing_dir),
    AVF_TEST (test_open_missing_file),
    AVF_TEST (test_open_directory),
    AVF_TEST (test_open_malformed_file))
