package difftest

import (
	"context"
	"errors"
	"io"
	"testing"

	"sluice/session"
	"sluice/sql"
)

// TestDeterministic: the same seed gives the same queries, another seed
// others.
func TestDeterministic(t *testing.T) {
	a, b, c := New(7), New(7), New(8)
	same := 0
	for range 200 {
		qa, qb, qc := a.Query(), b.Query(), c.Query()
		if qa != qb {
			t.Fatalf("seed 7 gave two different queries:\n%s\n%s", qa.SQL, qb.SQL)
		}
		if qa.SQL == qc.SQL {
			same++
		}
	}
	if same > 20 {
		t.Errorf("seeds 7 and 8 gave %d equal queries of 200", same)
	}
}

// TestEveryShape: each template appears in a short run, over both schemas.
func TestEveryShape(t *testing.T) {
	for _, schema := range []*Schema{TPCDS, TPCH} {
		g := NewFor(schema, 1)
		seen := map[string]bool{}
		for range 300 {
			seen[g.Query().Shape] = true
		}
		for _, s := range Shapes {
			if !seen[s] {
				t.Errorf("%s: no %s query in 300", schema.Name, s)
			}
		}
	}
}

// TestQueriesBind parses and binds generated queries against each schema
// (no data), then runs them in process on empty tables: every query the
// generator makes must be one sluice takes, so that a failure in the
// differential test is never the generator's.
func TestQueriesBind(t *testing.T) {
	for _, schema := range []*Schema{TPCDS, TPCH} {
		t.Run(schema.Name, func(t *testing.T) { testQueriesBind(t, schema) })
	}
}

func testQueriesBind(t *testing.T, schema *Schema) {
	cat := schema.EmptyCatalog()
	s := session.New(cat)
	ctx := context.Background()
	n := 2000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		seed := uint64(i)
		q := NewFor(schema, seed).Query()
		stmts, err := sql.Parse(q.SQL)
		if err != nil {
			t.Errorf("seed %d: parse: %v\n%s", seed, err, q.SQL)
			continue
		}
		if len(stmts) != 1 {
			t.Errorf("seed %d: %d statements\n%s", seed, len(stmts), q.SQL)
			continue
		}
		if _, err := (&sql.Binder{Catalog: cat}).Bind(stmts[0]); err != nil {
			t.Errorf("seed %d: bind: %v\n%s", seed, err, q.SQL)
			continue
		}
		if err := drain(ctx, s, q.SQL); err != nil {
			t.Errorf("seed %d: run on empty tables: %v\n%s", seed, err, q.SQL)
		}
	}
}

func drain(ctx context.Context, s *session.Session, text string) error {
	res, err := s.Execute(ctx, text)
	if err != nil {
		return err
	}
	defer res.Close()
	for {
		b, err := res.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		b.Release()
	}
}
