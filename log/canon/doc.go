// Package canon is the strict JSON reader and RFC 8785 (JCS) writer that every
// signed or digested byte string in histor goes through.
//
// The parser is written by hand because encoding/json cannot see the things
// AWR/2 §4 forbids: it keeps the last of two duplicate member names, turns
// 2340 and 2340.0 into the same float64 and replaces lone surrogates with
// U+FFFD. Whatever the parser accepts has exactly one canonical form, so two
// implementations that agree on the refusals agree on the bytes.
//
// Refusal codes follow the AWR/2 SPEC §11.2 AWR-CANON registry where it has a
// meaning for the case, and extend it by one code for resource bounds:
//
//	AWR-CANON-001  number literal with a fraction or exponent (lexical: 2340.0, 1e3)
//	AWR-CANON-002  integer outside ±(2^53−1)
//	AWR-CANON-003  invalid Unicode: a lone surrogate (escaped or raw) or invalid UTF-8
//	AWR-CANON-004  duplicate member name (compared after unescaping)
//	AWR-CANON-005  not well-formed JSON (syntax, trailing data, empty input)
//	AWR-CANON-006  canonical form mismatch; AWR reserves it for a normalising
//	               implementation, and this package never normalises, so it is
//	               defined here only so callers can name it
//	AWR-CANON-007  histor's extension: the input exceeds Limits (depth or size)
package canon
