package fakellm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/models", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /models: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServerListsModels(t *testing.T) {
	s := New(t)
	if status, body := get(t, s.URL(), ""); status != http.StatusOK || !strings.Contains(body, `"id":"gpt-4o-mini"`) {
		t.Errorf("GET /v1/models = %d %s, want 200 and a list", status, body)
	}
	s.Models(Status(http.StatusNotFound, `{"error":"not found"}`))
	if status, _ := get(t, strings.TrimSuffix(s.URL(), "/v1"), ""); status != http.StatusNotFound {
		t.Errorf("GET /models after Models(404) = %d", status)
	}
	if n := s.ModelListRequests(); n != 2 {
		t.Errorf("ModelListRequests() = %d, want 2", n)
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("Requests() holds %d entries, want the chat requests only", n)
	}
}

func TestServerRequiresKey(t *testing.T) {
	s := New(t, Text("fine"))
	s.RequireKey("sk-right-key-000000")
	if status, body := get(t, s.URL(), "sk-wrong-key-000000"); status != http.StatusUnauthorized || !strings.Contains(body, "invalid_api_key") {
		t.Errorf("GET /models with a wrong key = %d %s, want 401 invalid_api_key", status, body)
	}
	if status, _, _ := post(t, s.URL(), wellFormed); status != http.StatusUnauthorized {
		t.Errorf("chat without the key = %d, want 401", status)
	}
	if status, _ := get(t, s.URL(), "sk-right-key-000000"); status != http.StatusOK {
		t.Errorf("GET /models with the key = %d, want 200", status)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(wellFormed))
	req.Header.Set("Authorization", "Bearer sk-right-key-000000")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("chat with the key = %d, want 200 and the scripted turn", res.StatusCode)
	}
}

// Down refuses connections on the server's port, cutting off requests in
// flight; Up serves again at the same URL.
func TestServerDownAndUp(t *testing.T) {
	s := New(t, Hang(), Text("back"))
	url := s.URL()
	cut := make(chan error, 1)
	go func() {
		res, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(wellFormed))
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		cut <- err
	}()
	for len(s.Requests()) == 0 {
		time.Sleep(time.Millisecond) // the hung request has arrived once it is recorded
	}
	s.Down()
	if err := <-cut; err == nil {
		t.Error("a request in flight survived Down")
	}
	_, err := http.Get(url + "/models")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET while down: %v, want connection refused", err)
	}
	s.Up()
	if s.URL() != url {
		t.Errorf("URL changed from %s to %s", url, s.URL())
	}
	if status, body, _ := post(t, url, wellFormed); status != http.StatusOK {
		t.Errorf("after Up: %d %s", status, body)
	}
}

// A disruption answers every n-th request in place of the script, which
// resumes where it was.
func TestServerDisrupt(t *testing.T) {
	s := New(t, Text("one"), Text("two"))
	s.Disrupt(2, RateLimited("1"))
	var got []int
	for range 4 {
		status, _, _ := post(t, s.URL(), wellFormed)
		got = append(got, status)
	}
	if want := []int{200, 429, 200, 429}; !slices.Equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	if n := s.Disrupted(); n != 2 {
		t.Errorf("Disrupted() = %d, want 2", n)
	}
	s.Disrupt(1, ServerError(503))
	if status, _, _ := post(t, s.URL(), wellFormed); status != http.StatusServiceUnavailable {
		t.Errorf("Disrupt(1, 503): status %d", status)
	}
	s.Calm()
	s.Forever(Text("more"))
	if status, _, _ := post(t, s.URL(), wellFormed); status != http.StatusOK {
		t.Errorf("after Calm: status %d", status)
	}
}

// Peak counts the requests in flight at once, among those that arrived
// after the last ResetPeak.
func TestServerPeak(t *testing.T) {
	s := New(t)
	release := make(chan struct{})
	s.Forever(Func(func(Request) Turn {
		<-release
		return Text("ok")
	}))
	var wg sync.WaitGroup
	send := func(n int) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				post(t, s.URL(), wellFormed)
			}()
		}
	}
	send(3)
	for s.Peak() < 3 {
		time.Sleep(time.Millisecond)
	}
	s.ResetPeak()
	if p := s.Peak(); p != 0 {
		t.Errorf("Peak() after ResetPeak = %d, want 0", p)
	}
	send(2)
	for s.Peak() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if p := s.Peak(); p != 2 {
		t.Errorf("Peak() = %d, want 2: the three requests of the earlier measure do not count", p)
	}
}

// A delayed turn holds its answer, and gives up when the client does.
func TestTurnWithDelay(t *testing.T) {
	s := New(t, Text("slow").WithDelay(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(wellFormed))
	done := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	for s.Peak() == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the delayed answer came at once: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v, want canceled", err)
	}
}
