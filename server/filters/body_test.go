package filters_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/server/filters"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// echo answers 200 with the body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(data)
})

// bodyServer serves echo behind a timeout of limit, a user taken from the
// X-Test-User header, and the request-body stage.
func bodyServer(t *testing.T, timeout time.Duration, limits filters.BodyLimits) *httptest.Server {
	t.Helper()
	asUser := filters.Filter{Name: "user", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := auth.User{Name: r.Header.Get("X-Test-User")}
			next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
		})
	}}
	srv := httptest.NewServer(filters.Build(echo, []filters.Filter{filters.Timeout(timeout), asUser, filters.RequestBody(limits)}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRequestBodySizes(t *testing.T) {
	srv := bodyServer(t, time.Minute, filters.BodyLimits{MaxBytes: 10})
	post := func(body io.Reader, length int64) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := post(strings.NewReader("0123456789"), 10); code != 200 || body != "0123456789" {
		t.Errorf("a body at the limit: %d %q", code, body)
	}
	code, body := post(strings.NewReader("0123456789x"), 11)
	if st := statusOf(t, body); code != 413 || st.Reason != metav1.StatusReasonRequestEntityTooLarge {
		t.Errorf("a declared length over the limit: %d %+v", code, st)
	}
	code, body = post(io.MultiReader(strings.NewReader("0123456789"), strings.NewReader("x")), -1)
	if st := statusOf(t, body); code != 413 || st.Reason != metav1.StatusReasonRequestEntityTooLarge {
		t.Errorf("an undeclared body over the limit: %d %+v", code, st)
	}
}

// A body shorter than its Content-Length is answered 504 at the request's deadline,
// and the connection does not stay open.
func TestRequestBodyStalled(t *testing.T) {
	srv := bodyServer(t, 500*time.Millisecond, filters.BodyLimits{MaxBytes: 1 << 20})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled request: %v", err)
	}
	data, _ := io.ReadAll(resp.Body)
	if st := statusOf(t, string(data)); resp.StatusCode != 504 || st.Reason != metav1.StatusReasonTimeout {
		t.Errorf("a stalled body: %d %+v", resp.StatusCode, st)
	}
	if elapsed := time.Since(start); elapsed < 500*time.Millisecond {
		t.Errorf("answered after %v, before the deadline", elapsed)
	}
	// The server closes the connection: what is left of the body on the wire must
	// not be read as another request.
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stayed open after the timeout")
	}
}

// One user's stalled bodies beyond the cap are refused at once; another user's
// request goes through while they wait, and each counted one is answered 504.
func TestRequestBodyPerUser(t *testing.T) {
	srv := bodyServer(t, 3*time.Second, filters.BodyLimits{MaxBytes: 1 << 20, PerUser: 2})
	stall := func(name string) <-chan int {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Test-User: %s\r\nContent-Length: 10\r\n\r\n{", name)
		code := make(chan int, 1)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				code <- 0
				return
			}
			code <- resp.StatusCode
		}()
		return code
	}
	// Stall until one is refused: the ones not refused are being read.
	var pending []<-chan int
	refused := false
	for i := 0; i < 10 && !refused; i++ {
		c := stall("mallory")
		select {
		case code := <-c:
			if code != 429 {
				t.Fatalf("a stalled request of mallory's: %d, want 429 or no answer yet", code)
			}
			refused = true
		case <-time.After(300 * time.Millisecond):
			pending = append(pending, c)
		}
	}
	if !refused {
		t.Fatal("mallory's stalled requests were never refused")
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test-User", "alice")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("alice's request while mallory stalls: %d", resp.StatusCode)
	}
	timedOut := 0
	for _, c := range pending {
		switch code := <-c; code {
		case 504:
			timedOut++
		case 429:
		default:
			t.Errorf("a stalled request of mallory's: %d, want 504 or 429", code)
		}
	}
	if timedOut != 2 {
		t.Errorf("%d of mallory's stalled requests were read until the timeout, want the cap, 2", timedOut)
	}
}

func statusOf(t *testing.T, body string) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("body %q is not a Status: %v", body, err)
	}
	return st
}
