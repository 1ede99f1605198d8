// Package s3fake starts an S3-compatible object store on loopback for
// tests (gofakes3 with its in-memory backend) and points this process's
// S3 client at it through the environment, as a user points sluice at
// MinIO. It counts the requests and the object bytes it serves, so tests
// can check what a query downloaded.
package s3fake

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Credentials the fake accepts; requests signed with other keys, or not
// signed, are refused as S3 refuses them (403 InvalidAccessKeyId or
// AccessDenied).
const (
	KeyID  = "sluicetest"
	Secret = "sluicetestsecret"
)

// Server is a running fake store.
type Server struct {
	URL     string
	backend gofakes3.Backend

	gets     atomic.Int64 // GET requests for objects
	getBytes atomic.Int64 // body bytes those GETs returned
	mu       sync.Mutex
	log      []string // "METHOD path range" of every request
	wrap     func(r *http.Request, serve func())
}

// Start starts a store, stops it when t ends, and sets AWS_ENDPOINT_URL
// and the credentials in the environment (t.Setenv) for the code under
// test.
func Start(t testing.TB) *Server {
	t.Helper()
	backend := s3mem.New()
	faker := gofakes3.New(backend)
	s := &Server{backend: backend}
	inner := faker.Server()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.Method+" "+r.URL.Path+" "+r.Header.Get("Range"))
		wrap := s.wrap
		s.mu.Unlock()
		if wrap != nil {
			served := false
			wrap(r, func() { served = true; s.serve(w, r, inner) })
			if !served {
				http.Error(w, "dropped by the test", http.StatusServiceUnavailable)
			}
			return
		}
		s.serve(w, r, inner)
	}))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	t.Setenv("AWS_ENDPOINT_URL", ts.URL)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ACCESS_KEY_ID", KeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	return s
}

// Wrap has fn run around every request from now on: fn calls serve to
// have the store handle it (a request fn does not serve is answered 503),
// so a test can act before or after the store does, as a slow store or a
// client that gives up mid-request would.
func (s *Server) Wrap(fn func(r *http.Request, serve func())) {
	s.mu.Lock()
	s.wrap = fn
	s.mu.Unlock()
}

// serve checks a request's credentials and hands it to the store.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, inner http.Handler) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		denied(w, "AccessDenied", "Access Denied")
		return
	}
	if !strings.Contains(auth, "Credential="+KeyID+"/") {
		denied(w, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" && strings.Count(strings.Trim(r.URL.Path, "/"), "/") >= 1 {
		s.gets.Add(1)
		inner.ServeHTTP(&countingWriter{ResponseWriter: w, n: &s.getBytes}, r)
		return
	}
	inner.ServeHTTP(w, r)
}

func denied(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

// Write counts the bytes before they leave: a client that has read them
// all may check the count at once, before this handler returns.
func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n - len(p)))
	return n, err
}

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if err := s.backend.CreateBucket(name); err != nil {
		t.Fatal(err)
	}
}

// Put stores data as bucket/key.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	// The HTTP front end sets Last-Modified on uploads; the backend,
	// written to directly here, needs it given.
	meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}
	if _, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
}

// Delete removes bucket/key.
func (s *Server) Delete(t testing.TB, bucket, key string) {
	t.Helper()
	if _, err := s.backend.DeleteObject(bucket, key); err != nil {
		t.Fatal(err)
	}
}

// Gets is the number of object GET requests served so far.
func (s *Server) Gets() int64 { return s.gets.Load() }

// GetBytes is the number of object bytes GET requests returned so far.
func (s *Server) GetBytes() int64 { return s.getBytes.Load() }

// Reset zeroes the counters and the request log.
func (s *Server) Reset() {
	s.gets.Store(0)
	s.getBytes.Store(0)
	s.mu.Lock()
	s.log = nil
	s.mu.Unlock()
}

// Log returns the requests served since the last Reset.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}
