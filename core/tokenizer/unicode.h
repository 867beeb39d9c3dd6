/* Code-point helpers for the tokenizers: lenient UTF-8 decoding the way
 * llama.cpp does it, general-category classes, White_Space, and the GPT-2
 * byte <-> printable code point map. Internal to libskipper. */
#ifndef SKIPPER_UNICODE_H
#define SKIPPER_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum skipper_ucls {
	UCLS_NONE = 0, /* unassigned */
	UCLS_L = 1, UCLS_N = 2, UCLS_P = 3, UCLS_S = 4, UCLS_M = 5, UCLS_Z = 6, UCLS_C = 7,
};

extern const char skipper_unicode_version[];
extern const size_t skipper_unicode_n_runs;
extern const uint32_t skipper_unicode_runs[];

/* Decode one code point at s[*pos] (pos < len) and advance. Invalid or
 * truncated sequences consume one byte and give U+FFFD, like llama.cpp;
 * overlong forms are accepted as llama.cpp accepts them. */
uint32_t skipper_utf8_next(const char *s, size_t len, size_t *pos);
/* Encode cp (> 0x10FFFF becomes U+FFFD) into out[4]; returns the length. */
size_t skipper_utf8_put(uint32_t cp, char *out);
/* Length of a UTF-8 sequence judged from its first byte only (1 for
 * continuation bytes), as SentencePiece splits text. */
size_t skipper_utf8_len1(unsigned char c);

int skipper_ucls(uint32_t cp);
int skipper_uspace(uint32_t cp); /* Unicode White_Space */

/* GPT-2 byte-level alphabet: byte -> code point and back (-1 if cp is not
 * an image of a byte). */
uint32_t skipper_byte_to_cp(uint8_t b);
int skipper_cp_to_byte(uint32_t cp);

#endif
