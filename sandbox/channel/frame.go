package channel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A frame is a 9-byte header and a payload:
//
//	length  uint32, big-endian: the payload's length, at most MaxPayload
//	kind    uint8: one of the Kind values
//	id      uint32, big-endian: the request the frame belongs to (0 for hello)
//	payload length bytes: JSON for hello, request and reply; raw bytes for data
const headerSize = 9

// MaxPayload bounds one frame's payload. A larger length is a malformed
// frame, never an allocation.
const MaxPayload = 32 << 20

// Kind is what a frame carries.
type Kind uint8

const (
	// KindHello is the helper's first frame: a Hello.
	KindHello Kind = 1
	// KindRequest is the host's: a Request, under a fresh id.
	KindRequest Kind = 2
	// KindReply ends a request: a Reply.
	KindReply Kind = 3
	// KindData is a piece of a request's stream (the tar of the
	// workspace), before its reply.
	KindData Kind = 4
)

// ErrMalformed is a frame that breaks the protocol. The channel ends.
var ErrMalformed = errors.New("malformed frame")

// frame is one decoded frame.
type frame struct {
	kind    Kind
	id      uint32
	payload []byte
}

// writeFrame writes one frame in a single Write, so that writers sharing w
// under a lock never interleave.
func writeFrame(w io.Writer, kind Kind, id uint32, payload []byte) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("frame of %d bytes: over the limit of %d", len(payload), MaxPayload)
	}
	buf := make([]byte, headerSize+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	buf[4] = byte(kind)
	binary.BigEndian.PutUint32(buf[5:], id)
	copy(buf[headerSize:], payload)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame. A short header at the start of the stream is
// io.EOF; anything else that does not follow the format is ErrMalformed.
func readFrame(r io.Reader) (frame, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return frame{}, fmt.Errorf("%w: cut short in its header", ErrMalformed)
		}
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(h[:])
	f := frame{kind: Kind(h[4]), id: binary.BigEndian.Uint32(h[5:])}
	if n > MaxPayload {
		return frame{}, fmt.Errorf("%w: payload of %d bytes, over the limit of %d", ErrMalformed, n, MaxPayload)
	}
	if f.kind < KindHello || f.kind > KindData {
		return frame{}, fmt.Errorf("%w: unknown kind %d", ErrMalformed, f.kind)
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(r, f.payload); err != nil {
		return frame{}, fmt.Errorf("%w: payload cut short: %v", ErrMalformed, err)
	}
	return f, nil
}
