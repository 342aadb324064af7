package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// Defaults applied by NewOpenAI when the config leaves a duration at zero.
const (
	DefaultRequestTimeout = 5 * time.Minute
	DefaultMaxRetryWait   = time.Minute
	// DefaultMaxRetries is a sensible OpenAIConfig.MaxRetries for unattended
	// runs; zero in the config means no retries at all.
	DefaultMaxRetries = 6
	// firstRetryWait is the backoff before the second attempt; each further
	// retry doubles it, up to the configured maximum.
	firstRetryWait = time.Second
)

// retryPolicy runs attempts with a per-attempt timeout and waits between
// them with jittered exponential backoff or the wait the server asked for.
type retryPolicy struct {
	maxRetries     int
	attemptTimeout time.Duration
	maxWait        time.Duration
	firstWait      time.Duration
	jitter         func(time.Duration) time.Duration
	sleep          func(context.Context, time.Duration) error
	onRetry        func(attempt int, err error, wait time.Duration)
	// redact removes secrets from errors before anyone sees them.
	redact func(error) error
	// gate, if not nil, lets each attempt through and holds the call
	// while the endpoint is unavailable (see Endpoint).
	gate *Endpoint
}

// retry calls attempt until it succeeds, fails with an error that retrying
// cannot fix, or has failed maxRetries+1 times. Each call gets its own
// context bounded by attemptTimeout, so a hung response is abandoned and
// retried; when the caller's ctx ends, do returns at once without retrying.
func retry[T any](ctx context.Context, p retryPolicy, attempt func(context.Context) (T, error)) (T, error) {
	var zero T
	var last error
	for n := 1; ; n++ {
		pass, err := p.gate.admit(ctx)
		if err != nil {
			return zero, p.held(ctx, n-1, last, err)
		}
		got, err := runAttempt(ctx, p.attemptTimeout, attempt)
		pass.settle(err)
		if err == nil {
			return got, nil
		}
		if ctx.Err() != nil {
			return zero, canceled(ctx, n, err, p.redact)
		}
		err = p.redact(err)
		if !retryable(err) {
			return zero, err
		}
		if last = err; p.gate.holds(err, n > p.maxRetries) {
			// The endpoint is unavailable: wait for it, then retry afresh.
			if werr := p.gate.outage(ctx, err); werr != nil {
				return zero, p.held(ctx, n, err, werr)
			}
			n = 0
			continue
		}
		if n > p.maxRetries {
			return zero, fmt.Errorf("giving up after %s: %w", plural(n, "attempt"), err)
		}
		wait := p.wait(n, err)
		if p.onRetry != nil {
			p.onRetry(n, err, wait)
		}
		if serr := p.sleep(ctx, wait); serr != nil {
			return zero, canceled(ctx, n, err, p.redact)
		}
	}
}

// runAttempt calls attempt under a context that expires after timeout, and
// reports the expiry as ErrAttemptTimeout rather than as a cancellation.
func runAttempt[T any](ctx context.Context, timeout time.Duration, attempt func(context.Context) (T, error)) (T, error) {
	if timeout <= 0 {
		return attempt(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := attempt(actx)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return got, fmt.Errorf("%w after %s", ErrAttemptTimeout, timeout)
	}
	return got, err
}

// canceled reports that the caller's context ended, naming the failure that
// was pending when it did. The result matches ctx.Err() and its cause with
// errors.Is.
func canceled(ctx context.Context, attempts int, last error, redact func(error) error) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	if last != nil && !errors.Is(last, ctx.Err()) {
		return fmt.Errorf("%w (attempt %d had failed: %v)", err, attempts, redact(last))
	}
	return fmt.Errorf("%w (during attempt %d)", err, attempts)
}

// wait returns how long to wait after failed attempt n: the server's
// Retry-After when it sent one, or jittered exponential backoff, and never
// more than maxWait.
func (p retryPolicy) wait(n int, err error) time.Duration {
	var me *ModelError
	if errors.As(err, &me) && me.HasRetryAfter {
		return min(me.RetryAfter, p.maxWait)
	}
	d := p.maxWait
	if shift := n - 1; shift < 32 {
		if b := p.firstWait << shift; b > 0 && b < p.maxWait {
			d = b
		}
	}
	return min(p.jitter(d), p.maxWait)
}

// retryable reports whether another attempt may succeed where this one
// failed: connection failures, attempt timeouts, the statuses that mean
// "not now" (408, 409, 429 except quota, 5xx), and a success whose body is
// not a usable completion (a proxy's error page, a body cut short), which
// is a server failure like a 5xx.
func retryable(err error) bool {
	if errors.Is(err, ErrAttemptTimeout) || errors.Is(err, ErrBadResponse) {
		return true
	}
	if errors.Is(err, ErrAuth) || errors.Is(err, ErrQuota) || errors.Is(err, ErrContextLength) {
		return false
	}
	var me *ModelError
	if errors.As(err, &me) {
		switch {
		case me.StatusCode == http.StatusRequestTimeout,
			me.StatusCode == http.StatusConflict,
			me.StatusCode == http.StatusTooManyRequests,
			me.StatusCode >= 500:
			return true
		}
		return false
	}
	return connectionFailure(err)
}

// connectionFailure reports whether err comes from the transport: refused,
// reset or dropped connections and bodies cut short. A certificate the
// client does not trust is not a passing failure.
func connectionFailure(err error) bool {
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	if errors.As(err, &cert) || errors.As(err, &unknown) || errors.As(err, &host) {
		return false
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE)
}

// retryAfter reads the wait a server asks for, preferring Retry-After-Ms
// (milliseconds) over Retry-After (seconds or an HTTP date). A date in the
// past asks for no wait.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(1<<53) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > float64(1<<33) {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// equalJitter keeps half of d and randomises the other half, so that
// clients failing together do not retry together.
func equalJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleepContext waits for d or until ctx ends, whichever comes first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
