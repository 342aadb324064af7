package termsafe

import (
	"unicode/utf16"
	"unicode/utf8"
)

// JSON returns encoded JSON with every unsafe character that encoding/json
// leaves raw (DEL, the C1 controls, format characters such as the bidi
// overrides) written as a \u escape, and any byte that is not UTF-8 as
// \ufffd, the character encoding/json itself writes for one. The document
// means the same to a JSON reader, and `cat` of it on a terminal obeys
// nothing. data must be valid JSON (encoding/json's output): outside
// strings, JSON is ASCII, so only string contents change.
func JSON(data []byte) []byte {
	var out []byte // allocated at the first change
	for i := 0; i < len(data); {
		c := data[i]
		if c < 0x7f {
			if out != nil {
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		bad := r == utf8.RuneError && size == 1
		if !bad && !Unsafe(r) {
			if out != nil {
				out = append(out, data[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(data)+32), data[:i]...)
		}
		if bad {
			r = utf8.RuneError
		}
		if r > 0xffff {
			hi, lo := utf16.EncodeRune(r)
			out = appendU(appendU(out, hi), lo)
		} else {
			out = appendU(out, r)
		}
		i += size
	}
	if out == nil {
		return data
	}
	return out
}

func appendU(out []byte, r rune) []byte {
	return append(out, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
