package mcpclient

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strings"
)

// decoded returns resp's body with its content coding undone. The caller
// bounds what it reads from the result, so the byte budget applies to the
// decompressed size and a small bomb cannot expand into memory.
func decoded(resp *http.Response) (io.Reader, error) {
	var codings []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) > 1 {
		return nil, stopf(StatusProtocol, "stacked content-encodings are not accepted (%s)", strings.Join(codings, ", "))
	}
	if len(codings) == 0 {
		return resp.Body, nil
	}
	switch codings[0] {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, decodeErr("gzip", err)
		}
		// One gzip member: a second member is a stacked encoding in disguise.
		zr.Multistream(false)
		return zr, nil
	case "deflate":
		return deflateReader(resp.Body)
	default:
		return nil, stopf(StatusProtocol, "content-encoding %q is not accepted", codings[0])
	}
}

// deflateReader accepts "deflate" as HTTP defines it (zlib-wrapped) and as
// many servers send it (raw deflate), telling them apart by the zlib header.
func deflateReader(body io.Reader) (io.Reader, error) {
	br := bufio.NewReader(body)
	head, err := br.Peek(2)
	if err != nil && len(head) < 2 {
		return nil, decodeErr("deflate", err)
	}
	if (uint16(head[0])<<8|uint16(head[1]))%31 == 0 && head[0]&0x0f == 8 {
		zr, err := zlib.NewReader(br)
		if err != nil {
			return nil, decodeErr("deflate", err)
		}
		return zr, nil
	}
	return flate.NewReader(br), nil
}

func decodeErr(coding string, err error) error {
	if isDecodeErr(err) {
		return stopf(StatusProtocol, "%s body does not decode: %v", coding, err)
	}
	return err
}

// isDecodeErr tells a malformed compressed stream (the server's fault) from a
// transport failure or a deadline that interrupted the read.
func isDecodeErr(err error) bool {
	var ce flate.CorruptInputError
	return errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) ||
		errors.Is(err, zlib.ErrHeader) || errors.Is(err, zlib.ErrChecksum) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ce)
}

// readBounded reads r to its end, refusing more than limit bytes.
func readBounded(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, readErr(err)
	}
	if int64(len(b)) > limit {
		return nil, stopf(StatusTooLarge, "%s exceeded %d bytes", what, limit)
	}
	return b, nil
}

func readErr(err error) error {
	if isDecodeErr(err) {
		return stopf(StatusProtocol, "body does not decode: %v", err)
	}
	return err
}
