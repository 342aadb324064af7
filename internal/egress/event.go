package egress

import "time"

// Decisions of an Event.
const (
	Allowed = "allowed"
	Refused = "refused"
)

// Event is one connection the sandbox asked the proxy for. An allowed
// connection is reported when it ends, with its byte counts; a refused one
// when it is refused.
type Event struct {
	Time time.Time `json:"time"`
	// Method is CONNECT for a tunnel, else the HTTP method of a forwarded
	// plain-HTTP request.
	Method string `json:"method"`
	// Host and Port are what the sandbox asked for (Host as sent, for a
	// refused request that could not be read as a name).
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	// Addr is the address the proxy resolved the name to and dialled.
	Addr     string `json:"addr,omitempty"`
	Decision string `json:"decision"`
	// Reason says why a connection was refused, or how an allowed one
	// failed (the upstream did not answer, say).
	Reason string `json:"reason,omitempty"`
	// BytesUp went from the sandbox to the host, BytesDown back.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// Stopped is the Method of the event a backend reports when the proxy
// stopped before the sandbox was closed; Reason says why.
const Stopped = "STOPPED"
