/* See unicode.h. */
#include "unicode.h"

uint32_t skipper_utf8_next(const char *s, size_t len, size_t *pos)
{
	const unsigned char *u = (const unsigned char *)s + *pos;
	size_t left = len - *pos;
	uint32_t cp;
	size_t n;

	if (u[0] < 0x80) {
		*pos += 1;
		return u[0];
	}
	if ((u[0] & 0x40) == 0)
		goto bad; /* stray continuation byte */
	if ((u[0] & 0x20) == 0) {
		n = 2;
		cp = u[0] & 0x1f;
	} else if ((u[0] & 0x10) == 0) {
		n = 3;
		cp = u[0] & 0x0f;
	} else if ((u[0] & 0x08) == 0) {
		n = 4;
		cp = u[0] & 0x07;
	} else {
		goto bad;
	}
	if (n > left)
		goto bad;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			goto bad;
		cp = (cp << 6) | (u[i] & 0x3f);
	}
	*pos += n;
	return cp;
bad:
	*pos += 1;
	return 0xFFFD;
}

size_t skipper_utf8_put(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;
	if (cp > 0x10FFFF)
		cp = 0xFFFD;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

size_t skipper_utf8_len1(unsigned char c)
{
	static const unsigned char len[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4 };
	return len[c >> 4];
}

int skipper_ucls(uint32_t cp)
{
	/* binary search over ~2200 runs: 12 steps, cheap next to BPE itself */
	size_t lo = 0, hi = skipper_unicode_n_runs;
	if (cp > 0x10FFFF)
		return UCLS_NONE;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if ((skipper_unicode_runs[mid] >> 8) <= cp)
			lo = mid;
		else
			hi = mid;
	}
	return (int)(skipper_unicode_runs[lo] & 0xff);
}

int skipper_uspace(uint32_t cp)
{
	/* PropList.txt White_Space; stable across Unicode versions. */
	if (cp <= 0x20)
		return cp == 0x20 || (cp >= 0x09 && cp <= 0x0d);
	if (cp < 0x85)
		return 0;
	return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Bytes that are printable Latin-1 stand for themselves; the others
 * (controls, space, DEL, NBSP block, soft hyphen) are moved to 256 + k in
 * byte order, so every byte has a visible, distinct code point. */
static int printable_byte(unsigned b)
{
	return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

uint32_t skipper_byte_to_cp(uint8_t b)
{
	unsigned k = 0;
	if (printable_byte(b))
		return b;
	for (unsigned i = 0; i < b; i++)
		if (!printable_byte(i))
			k++;
	return 256 + k;
}

int skipper_cp_to_byte(uint32_t cp)
{
	if (cp < 256)
		return printable_byte(cp) ? (int)cp : -1;
	if (cp >= 256 + 68)
		return -1;
	unsigned k = 0;
	for (unsigned i = 0; i < 256; i++)
		if (!printable_byte(i) && k++ == cp - 256)
			return (int)i;
	return -1;
}
