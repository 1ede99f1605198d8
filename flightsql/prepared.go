package flightsql

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sluice/rpc"
	"sluice/sql"
)

// prepared is a prepared statement: its text with parameter markers ($1,
// or ?) and the values last bound, as SQL literals. Executing it runs the
// text with the literals in place of the markers (sql.SubstituteParams),
// in the caller's session; the statement is planned anew each time.
type prepared struct {
	query   string
	nparams int

	mu       sync.Mutex
	params   []string
	lastUsed time.Time
}

// preparedStatements are the live prepared statements, by handle.
type preparedStatements struct {
	mu       sync.Mutex
	byHandle map[string]*prepared
}

func (ps *preparedStatements) get(handle []byte) (*prepared, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.byHandle[string(handle)]
	if !ok {
		return nil, status.Error(codes.NotFound, "unknown prepared statement (closed, unused for too long, or prepared on another server)")
	}
	p.lastUsed = time.Now()
	return p, nil
}

// expire forgets the statements unused since cutoff: a client that never
// closes its statements must not grow the server for ever.
func (ps *preparedStatements) expire(cutoff time.Time) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for h, p := range ps.byHandle {
		if p.lastUsed.Before(cutoff) {
			delete(ps.byHandle, h)
		}
	}
}

// CreatePreparedStatement prepares a statement. Its parameters are
// counted now (so a bad marker fails here); its result schema is not
// reported, since sluice plans when it executes.
func (s *Server) CreatePreparedStatement(ctx context.Context, req afsql.ActionCreatePreparedStatementRequest) (afsql.ActionCreatePreparedStatementResult, error) {
	var out afsql.ActionCreatePreparedStatementResult
	if len(req.GetTransactionId()) > 0 {
		return out, status.Error(codes.InvalidArgument, "sluice has no transactions")
	}
	n, err := sql.CountParams(req.GetQuery())
	if err != nil {
		return out, statusOf(err)
	}
	handle := rpc.RandomHex(16)
	s.prepared.mu.Lock()
	s.prepared.byHandle[handle] = &prepared{query: req.GetQuery(), nparams: n, lastUsed: time.Now()}
	s.prepared.mu.Unlock()
	out.Handle = []byte(handle)
	return out, nil
}

// ClosePreparedStatement forgets a prepared statement.
func (s *Server) ClosePreparedStatement(ctx context.Context, req afsql.ActionClosePreparedStatementRequest) error {
	s.prepared.mu.Lock()
	defer s.prepared.mu.Unlock()
	h := string(req.GetPreparedStatementHandle())
	if _, ok := s.prepared.byHandle[h]; !ok {
		return status.Error(codes.NotFound, "unknown prepared statement")
	}
	delete(s.prepared.byHandle, h)
	return nil
}

// DoPutPreparedStatementQuery binds parameter values: one row, a column
// per parameter in order. No row clears them.
func (s *Server) DoPutPreparedStatementQuery(ctx context.Context, cmd afsql.PreparedStatementQuery, rdr flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	if err := p.bind(rdr); err != nil {
		return nil, err
	}
	return cmd.GetPreparedStatementHandle(), nil
}

// GetFlightInfoPreparedStatement executes a prepared statement with its
// bound values, as GetFlightInfoStatement executes a statement.
func (s *Server) GetFlightInfoPreparedStatement(ctx context.Context, cmd afsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, err
	}
	text, err := p.text()
	if err != nil {
		return nil, err
	}
	return s.run(ctx, text, desc)
}

// DoPutPreparedStatementUpdate executes a prepared statement for its
// effect, with the values sent (or those bound before, when none are).
func (s *Server) DoPutPreparedStatementUpdate(ctx context.Context, cmd afsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	p, err := s.prepared.get(cmd.GetPreparedStatementHandle())
	if err != nil {
		return 0, err
	}
	if rdr != nil && rdr.Schema() != nil && rdr.Schema().NumFields() > 0 {
		if err := p.bind(rdr); err != nil {
			return 0, err
		}
	}
	text, err := p.text()
	if err != nil {
		return 0, err
	}
	return s.update(ctx, text)
}

// bind reads the parameter batches of a DoPut.
func (p *prepared) bind(rdr flight.MessageReader) error {
	var row []string
	rows := 0
	for rdr.Next() {
		b := rdr.RecordBatch()
		for r := 0; r < int(b.NumRows()); r++ {
			rows++
			if rows > 1 {
				return status.Error(codes.InvalidArgument, "bind one row of parameter values per execution (sluice does not run a statement once per row)")
			}
			row = make([]string, b.NumCols())
			for c := range row {
				lit, err := literal(b.Column(c), r)
				if err != nil {
					return status.Errorf(codes.InvalidArgument, "parameter %d: %v", c+1, err)
				}
				row[c] = lit
			}
		}
	}
	if err := rdr.Err(); err != nil {
		return status.Errorf(codes.InvalidArgument, "reading parameters: %v", err)
	}
	if rows > 0 && len(row) != p.nparams {
		return status.Errorf(codes.InvalidArgument, "the statement has %d parameters, %d values were bound", p.nparams, len(row))
	}
	p.mu.Lock()
	p.params = row
	p.mu.Unlock()
	return nil
}

// text is the statement with its bound values in place.
func (p *prepared) text() (string, error) {
	p.mu.Lock()
	params := p.params
	p.mu.Unlock()
	if p.nparams == 0 && len(params) == 0 {
		return p.query, nil
	}
	if len(params) == 0 {
		return "", status.Errorf(codes.InvalidArgument, "the statement has %d parameters and no values were bound", p.nparams)
	}
	text, err := sql.SubstituteParams(p.query, params)
	if err != nil {
		return "", status.Error(codes.InvalidArgument, err.Error())
	}
	return text, nil
}

// literal writes row i of a parameter column as a SQL constant of the
// matching type.
func literal(col arrow.Array, i int) (string, error) {
	if col.IsNull(i) {
		return "NULL", nil
	}
	switch a := col.(type) {
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10), nil
	case *array.Int64:
		v := a.Value(i)
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return strconv.FormatInt(v, 10), nil
		}
		return "CAST(" + strconv.FormatInt(v, 10) + " AS BIGINT)", nil
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10), nil
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10), nil
	case *array.Uint32:
		return "CAST(" + strconv.FormatUint(uint64(a.Value(i)), 10) + " AS BIGINT)", nil
	case *array.Uint64:
		v := a.Value(i)
		if v > math.MaxInt64 {
			return "", fmt.Errorf("%d is out of range for BIGINT", v)
		}
		return "CAST(" + strconv.FormatUint(v, 10) + " AS BIGINT)", nil
	case *array.Float32:
		return floatLiteral(float64(a.Value(i)))
	case *array.Float64:
		return floatLiteral(a.Value(i))
	case *array.Boolean:
		if a.Value(i) {
			return "TRUE", nil
		}
		return "FALSE", nil
	case *array.String:
		return quote(a.Value(i))
	case *array.LargeString:
		return quote(a.Value(i))
	case *array.Date32:
		return "DATE '" + a.Value(i).FormattedString() + "'", nil
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		t := a.Value(i).ToTime(unit).UTC()
		return "TIMESTAMP '" + t.Format("2006-01-02 15:04:05.999999") + "'", nil
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return fmt.Sprintf("CAST('%s' AS DECIMAL(%d, %d))", a.Value(i).ToString(dt.Scale), dt.Precision, dt.Scale), nil
	case *array.Null:
		return "NULL", nil
	}
	return "", fmt.Errorf("values of type %s cannot be bound (use integers, floats, decimals, strings, booleans, dates or timestamps)", col.DataType())
}

func floatLiteral(v float64) (string, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "", fmt.Errorf("%v cannot be bound", v)
	}
	return "CAST('" + strconv.FormatFloat(v, 'g', -1, 64) + "' AS DOUBLE)", nil
}

// quote writes s as a SQL string constant.
func quote(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("a string holding a NUL character cannot be bound")
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}
