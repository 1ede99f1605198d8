// Package flightsql serves Arrow Flight SQL on a sluice cluster, so that
// standard drivers (ADBC, JDBC, arrow-go's flightsql client) run queries
// on it: statements and prepared statements, catalog metadata, cancel,
// and per-client sessions whose SETs change that client's settings.
//
// The server runs in the scheduler's process. Each Flight SQL client
// session is a sluice session (a session.Fork of one connected to the
// scheduler), so a statement runs exactly as the shell's does, in the
// session's execution mode; metadata is read from the scheduler's catalog
// directly.
package flightsql

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/rpc"
	"sluice/session"
)

// Config configures a Flight SQL server.
type Config struct {
	// Bind is the listen address (host:port; port 0 picks a free one).
	Bind string
	// SchedulerAddr is the scheduler's gRPC address; every client session
	// connects to it.
	SchedulerAddr string
	// SchedulerSecurity is what the sessions present to the scheduler and
	// executors (the cluster's token and client TLS).
	SchedulerSecurity *rpc.Security
	// Security protects the Flight SQL port: callers must send its Token
	// as "authorization: Bearer <token>", and its ServerTLS is served.
	// nil: no token, plaintext.
	Security *rpc.Security
	// Catalog is the scheduler's catalog, for the metadata calls.
	Catalog *catalog.Catalog
	// Version is reported as the server's version (GetSqlInfo).
	Version string
	// SessionIdle is how long a client session may go unused before it is
	// closed (default 30 minutes).
	SessionIdle time.Duration
	// ResultIdle is how long a statement's result waits for the client's
	// DoGet before it is dropped and its job cancelled (default 5
	// minutes).
	ResultIdle time.Duration
	// Logger receives the server's events (nil: discarded).
	Logger *slog.Logger
}

// Server is a running Flight SQL endpoint.
type Server struct {
	afsql.BaseServer
	cfg      Config
	log      *slog.Logger
	srv      *grpc.Server
	addr     string
	sessions *sessions
	results  *results
	prepared preparedStatements
	infos    map[uint32]bool // the SqlInfo ids registered

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Start listens on cfg.Bind and serves Flight SQL until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.SchedulerAddr == "" {
		return nil, fmt.Errorf("flight sql: no scheduler address")
	}
	if cfg.Catalog == nil {
		return nil, fmt.Errorf("flight sql: no catalog")
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 30 * time.Minute
	}
	if cfg.ResultIdle <= 0 {
		cfg.ResultIdle = 5 * time.Minute
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	lis, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("flight sql: listening on %s: %w", cfg.Bind, err)
	}
	// One connection to the scheduler serves every client session; it is
	// made lazily, so a scheduler that is not up yet fails statements,
	// not the start.
	base, err := session.ConnectWith(cfg.SchedulerAddr, cfg.SchedulerSecurity)
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("flight sql: %w", err)
	}
	s := &Server{
		cfg: cfg, log: log, addr: lis.Addr().String(),
		sessions: newSessions(base),
		results:  newResults(),
		prepared: preparedStatements{byHandle: map[string]*prepared{}},
		stop:     make(chan struct{}),
	}
	s.Alloc = memory.DefaultAllocator
	if err := s.registerSqlInfo(); err != nil {
		lis.Close()
		base.Close()
		return nil, err
	}
	// The token check (cluster.NewServer) runs before the session
	// interceptors, so a caller without the token gets no session.
	s.srv = cluster.NewServer(cfg.Security,
		[]grpc.UnaryServerInterceptor{s.sessions.unary},
		[]grpc.StreamServerInterceptor{s.sessions.stream})
	flight.RegisterFlightServiceServer(s.srv, afsql.NewFlightServer(s))
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.srv.Serve(lis); err != nil {
			log.Error("flight sql server stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.sweep()
	}()
	log.Info("flight sql listening", "addr", s.addr, "auth", cfg.Security.Authenticated(), "tls", cfg.Security.Encrypted())
	if w := cfg.Security.ExposedWarning("the Flight SQL endpoint", cfg.Bind); w != "" {
		log.Warn(w)
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr }

// Close stops serving, cancels every result not yet read and closes every
// session.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.stop)
		cluster.StopGracefully(s.srv, 5*time.Second)
		s.wg.Wait()
		s.results.closeAll()
		s.sessions.closeAll()
		s.log.Info("flight sql stopped")
	})
}

// sweep drops results nobody fetched, and sessions and prepared
// statements nobody used, once a
// minute (or a tenth of the shorter timeout), until Close.
func (s *Server) sweep() {
	every := min(time.Minute, s.cfg.ResultIdle/10, s.cfg.SessionIdle/10)
	t := time.NewTicker(max(every, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			if n := s.results.expire(now.Add(-s.cfg.ResultIdle)); n > 0 {
				s.log.Info("flight sql: dropped results never fetched", "count", n)
			}
			s.sessions.expire(now.Add(-s.cfg.SessionIdle))
			s.prepared.expire(now.Add(-s.cfg.SessionIdle))
		}
	}
}

// registerSqlInfo declares what GetSqlInfo reports.
func (s *Server) registerSqlInfo() error {
	infos := map[afsql.SqlInfo]any{
		afsql.SqlInfoFlightSqlServerName:         "sluice",
		afsql.SqlInfoFlightSqlServerVersion:      s.cfg.Version,
		afsql.SqlInfoFlightSqlServerArrowVersion: arrowVersion,
		afsql.SqlInfoFlightSqlServerReadOnly:     true,
		afsql.SqlInfoFlightSqlServerSql:          true,
		afsql.SqlInfoFlightSqlServerSubstrait:    false,
		afsql.SqlInfoFlightSqlServerTransaction:  int32(afsql.SqlTransactionNone),
		afsql.SqlInfoFlightSqlServerCancel:       true,
		afsql.SqlInfoDDLCatalog:                  false,
		afsql.SqlInfoDDLSchema:                   false,
		afsql.SqlInfoDDLTable:                    true,
		afsql.SqlInfoIdentifierQuoteChar:         `"`,
		afsql.SqlInfoIdentifierCase:              int32(afsql.SqlCaseSensitivityLowerCase),
		afsql.SqlInfoQuotedIdentifierCase:        int32(afsql.SqlCaseSensitivityCaseInsensitive),
		afsql.SqlInfoAllTablesAreASelectable:     true,
		afsql.SqlInfoNullOrdering:                int32(afsql.SqlNullOrderingSortAtEnd),
		afsql.SqlInfoSearchStringEscape:          `\`,
		afsql.SqlInfoSupportsColumnAliasing:      true,

		afsql.SqlInfoFlightSqlServerSubstraitMinVersion:         "",
		afsql.SqlInfoFlightSqlServerSubstraitMaxVersion:         "",
		afsql.SqlInfoFlightSqlServerStatementTimeout:            int32(0),
		afsql.SqlInfoFlightSqlServerTransactionTimeout:          int32(0),
		afsql.SqlInfoFlightSqlServerBulkIngestion:               false,
		afsql.SqlInfoFlightSqlServerIngestTransactionsSupported: false,
		afsql.SqlInfoTransactionsSupported:                      false,
	}
	s.infos = map[uint32]bool{}
	for id, v := range infos {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return fmt.Errorf("flight sql: sql info %s: %w", id, err)
		}
		s.infos[uint32(id)] = true
	}
	return nil
}

// arrowVersion is the Arrow format version the server speaks.
const arrowVersion = "18.8.0"

// emptySchema is the schema of a statement without rows (SET, CREATE).
var emptySchema = arrow.NewSchema(nil, nil)

// flightInfo is the FlightInfo of one result: one endpoint whose ticket
// the client presents to DoGet, on this server (no location: the client
// uses the connection it has).
func (s *Server) flightInfo(desc *flight.FlightDescriptor, schema *arrow.Schema, ticket []byte) *flight.FlightInfo {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: ticket}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(schema, s.Alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// DoGetSqlInfo answers the infos the server knows and leaves out the
// others: drivers ask for a fixed list at connect, and one unknown id must
// not fail the connection (arrow-go's BaseServer refuses the whole call).
func (s *Server) DoGetSqlInfo(ctx context.Context, cmd afsql.GetSqlInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if len(cmd.GetInfo()) == 0 {
		return s.BaseServer.DoGetSqlInfo(ctx, cmd)
	}
	known := knownInfos{}
	for _, id := range cmd.GetInfo() {
		if _, ok := s.infos[id]; ok {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		// BaseServer reads an empty list as "all": answer none instead.
		b := array.NewRecordBuilder(s.Alloc, schema_ref.SqlInfo)
		defer b.Release()
		ch := make(chan flight.StreamChunk, 1)
		ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
		close(ch)
		return schema_ref.SqlInfo, ch, nil
	}
	return s.BaseServer.DoGetSqlInfo(ctx, known)
}

// knownInfos is a GetSqlInfo request for the given ids.
type knownInfos []uint32

func (k knownInfos) GetInfo() []uint32 { return k }
