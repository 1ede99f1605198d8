package flightsql

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"sluice/rpc"
	"sluice/session"
)

// SessionCookie names the cookie that identifies a client's session, as
// in Flight SQL's session management (arrow-go's flight/session uses the
// same name): the server sets it on a client's first call; a client that
// sends it back (arrow-go's flight.NewClientCookieMiddleware, ADBC's
// cookie option) keeps its session, and with it its settings. A client
// that drops cookies gets a fresh session, with default settings, per
// call. (Prepared statements are found by their handles, whatever the
// session.)
const SessionCookie = "arrow_flight_session_id"

// clientSession is one Flight SQL client's sluice session: a fork of the
// server's session (session.Fork), so it has settings of its own and
// shares the server's connection to the scheduler.
type clientSession struct {
	id string

	// mu serializes the session's statements: a sluice session runs one
	// at a time (its settings change as SETs run).
	mu       sync.Mutex
	sess     *session.Session
	lastUsed time.Time // guarded by sessions.mu
	closed   bool
}

// sessions are the live client sessions, by cookie value.
type sessions struct {
	base *session.Session // the connection every client session forks

	mu   sync.Mutex
	byID map[string]*clientSession
}

func newSessions(base *session.Session) *sessions {
	return &sessions{base: base, byID: map[string]*clientSession{}}
}

type sessionKey struct{}

// sessionFrom is the calling client's session (set by the interceptors).
func sessionFrom(ctx context.Context) (*clientSession, error) {
	cs, ok := ctx.Value(sessionKey{}).(*clientSession)
	if !ok {
		return nil, fmt.Errorf("internal: no client session")
	}
	return cs, nil
}

// attach finds the session the call's cookie names, or makes one and
// returns the Set-Cookie header that hands it to the client.
func (s *sessions) attach(ctx context.Context) (context.Context, metadata.MD) {
	if id := incomingCookie(ctx); id != "" {
		s.mu.Lock()
		cs, ok := s.byID[id]
		if ok {
			cs.lastUsed = time.Now()
		}
		s.mu.Unlock()
		if ok {
			return context.WithValue(ctx, sessionKey{}, cs), nil
		}
	}
	cs := &clientSession{id: rpc.RandomHex(16), sess: s.base.Fork(), lastUsed: time.Now()}
	s.mu.Lock()
	s.byID[cs.id] = cs
	s.mu.Unlock()
	c := http.Cookie{Name: SessionCookie, Value: cs.id}
	return context.WithValue(ctx, sessionKey{}, cs), metadata.Pairs("set-cookie", c.String())
}

// incomingCookie is the session cookie's value in the call's metadata.
func incomingCookie(ctx context.Context) string {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ""
	}
	for _, h := range md.Get("cookie") {
		cookies, err := http.ParseCookie(h)
		if err != nil {
			continue
		}
		for _, c := range cookies {
			if c.Name == SessionCookie {
				return c.Value
			}
		}
	}
	return ""
}

func (s *sessions) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, md := s.attach(ctx)
	if md != nil {
		_ = grpc.SetHeader(ctx, md)
	}
	return handler(ctx, req)
}

func (s *sessions) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, md := s.attach(ss.Context())
	if md != nil {
		_ = ss.SetHeader(md)
	}
	return handler(srv, &sessionStream{ServerStream: ss, ctx: ctx})
}

// sessionStream is a server stream whose context carries the session.
type sessionStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *sessionStream) Context() context.Context { return s.ctx }

// execute runs one statement in the client's session. The result is read
// later, by DoGet, outside the session's lock.
func (s *sessions) execute(ctx context.Context, cs *clientSession, text string) (*session.Result, error) {
	var res *session.Result
	err := s.withSession(cs, func(sess *session.Session) error {
		var err error
		res, err = sess.Execute(ctx, text)
		return err
	})
	return res, err
}

// withSession runs f on the client's sluice session under its lock.
func (s *sessions) withSession(cs *clientSession, f func(*session.Session) error) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return fmt.Errorf("the session was closed")
	}
	return f(cs.sess)
}

// close ends a session: it is forgotten with its settings. Results it
// produced and not yet read stay readable.
func (s *sessions) close(cs *clientSession) {
	s.mu.Lock()
	delete(s.byID, cs.id)
	s.mu.Unlock()
	cs.mu.Lock()
	cs.closed = true
	cs.mu.Unlock()
}

// expire closes the sessions last used before cutoff.
func (s *sessions) expire(cutoff time.Time) {
	s.mu.Lock()
	var old []*clientSession
	for _, cs := range s.byID {
		if cs.lastUsed.Before(cutoff) {
			old = append(old, cs)
		}
	}
	s.mu.Unlock()
	for _, cs := range old {
		s.close(cs)
	}
}

// closeAll ends every session and closes the shared connection.
func (s *sessions) closeAll() {
	s.expire(time.Now().Add(time.Hour))
	s.base.Close()
}
