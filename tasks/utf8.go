package tasks

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// utf8BOM may start a file; YAML skips it, and so does the JSON Lines reader.
var utf8BOM = []byte("\xef\xbb\xbf")

// invalidUTF8 finds the first byte of data that is not part of valid UTF-8
// and returns its 1-based line and column (in characters, as the other
// positions of a task file are counted) and a description. ok is false when
// data is valid.
func invalidUTF8(data []byte) (line, col int, what string, ok bool) {
	if utf8.Valid(data) {
		return 0, 0, "", false
	}
	off := 0
	for off < len(data) {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	line = bytes.Count(data[:off], []byte("\n")) + 1
	col = utf8.RuneCount(data[start:off]) + 1
	return line, col, fmt.Sprintf("invalid UTF-8 (byte 0x%02x); task files must be UTF-8 text", data[off]), true
}

// utf16BOM reports whether data starts with a UTF-16 byte order mark, which
// the YAML decoder reads as UTF-16.
func utf16BOM(data []byte) bool {
	return bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe})
}
