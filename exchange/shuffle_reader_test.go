package exchange

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"sluice/physical"
	"sluice/rpc"
)

// writeStage runs a hash shuffle of rows keys into n output partitions on
// env and returns the reader's partition lists.
func writeStage(t *testing.T, env *Env, job string, stage, rows, n int) [][]*rpc.PartitionLocation {
	t.Helper()
	tc, _ := checkedTC(t, taskEnv(env, job, stage, 0))
	src := rowsSource(3, rows, 37)
	locs, err := NewShuffleWriter(src, job, stage, hashPart(n)).RunTask(context.Background(), []int{0, 1, 2}, tc)
	if err != nil {
		t.Fatal(err)
	}
	parts := make([][]*rpc.PartitionLocation, n)
	for _, l := range locs {
		parts[l.Partition] = append(parts[l.Partition], l)
	}
	return parts
}

func TestShuffleRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		remote bool
		codec  Compression
	}{
		{name: "local files"},
		{name: "over Flight", remote: true},
		{name: "local files uncompressed", codec: CompressNone},
		{name: "over Flight uncompressed", remote: true, codec: CompressNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			producer, _ := newExecutorEnv(t, "e1")
			producer.Compression = tt.codec
			parts := writeStage(t, producer, "job", 1, 900, 4)
			reader := producer
			if tt.remote {
				reader = &Env{ExecutorID: "e2", Clients: NewClientPool(nil), MaxFetchBytes: 1 << 20}
				t.Cleanup(func() { reader.Clients.Close() })
			}
			if all := readStage(t, reader, parts); !slices.Equal(all, expectedRows(900)) {
				t.Fatalf("read %d rows, want 900 (contents differ)", len(all))
			}
		})
	}
}

func TestShuffleReaderEmptyPartition(t *testing.T) {
	r := NewShuffleReader(1, testSchema, [][]*rpc.PartitionLocation{nil})
	tc, _ := checkedTC(t, &Env{})
	s, err := r.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := readAll(t, s); err != nil || len(rows) != 0 {
		t.Fatalf("rows %v, err %v", rows, err)
	}
}

func TestShuffleReaderFetchFailure(t *testing.T) {
	checkGoroutines(t)
	producer, svc := newExecutorEnv(t, "e1")
	parts := writeStage(t, producer, "job", 3, 200, 2)
	client := &Env{ExecutorID: "e2", Clients: NewClientPool(nil)}
	t.Cleanup(func() { client.Clients.Close() })

	tests := []struct {
		name  string
		setup func()
	}{
		{name: "files removed", setup: func() {
			if err := svc.RemoveJob("job"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "executor gone", setup: func() {
			for _, l := range parts[0] {
				l.FlightAddress = closedAddr(t)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup()
			tc, _ := checkedTC(t, client)
			s, err := NewShuffleReader(3, testSchema, parts).Execute(context.Background(), 0, tc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = readAll(t, s)
			var fe *FetchError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FetchError", err)
			}
			if fe.ExecutorID != "e1" || fe.StageID != 3 || fe.Partition != 0 ||
				!slices.ContainsFunc(parts[0], func(l *rpc.PartitionLocation) bool { return int(l.MapPartition) == fe.MapPartition }) {
				t.Errorf("fetch error names the wrong producer: %+v", fe)
			}
		})
	}
}

func TestShuffleReaderCapsBytesInFlight(t *testing.T) {
	producer, _ := newExecutorEnv(t, "e1")
	// One output partition: every map partition's file belongs to it.
	parts := writeStage(t, producer, "job", 1, 3000, 1)
	var largest, total int64
	for _, l := range parts[0] {
		largest = max(largest, l.NumBytes)
		total += l.NumBytes
	}
	if len(parts[0]) != 3 {
		t.Fatalf("want 3 files, got %d", len(parts[0]))
	}
	first := parts[0][0].NumBytes
	tests := []struct {
		name  string
		limit int64
		want  int64 // in flight once the unread stream has stalled
	}{
		// Fetches are admitted in order; two files never fit the cap.
		{name: "one file at a time", limit: largest, want: first},
		{name: "all at once", limit: total, want: total},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGoroutines(t)
			for _, remote := range []bool{false, true} {
				env := &Env{ExecutorID: "e1", WorkDir: producer.WorkDir, MaxFetchBytes: tt.limit}
				if remote {
					env = &Env{ExecutorID: "e2", Clients: NewClientPool(nil), MaxFetchBytes: tt.limit}
					defer env.Clients.Close()
				}
				tc, _ := checkedTC(t, env)
				st, err := NewShuffleReader(1, testSchema, parts).Execute(context.Background(), 0, tc)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				s := st.(*shuffleStream)
				// Nobody reads yet: the admitted fetches fill the channel
				// and stall, and the rest wait for budget.
				deadline := time.Now().Add(5 * time.Second)
				for s.inflight.Load() != tt.want && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond) // polling state that cannot be awaited
				}
				if got := s.inflight.Load(); got != tt.want {
					t.Errorf("remote=%v: %d bytes in flight, want %d under cap %d", remote, got, tt.want, tt.limit)
				}
				rows, err := readAll(t, s)
				if err != nil || len(rows) != 3000 {
					t.Fatalf("remote=%v: read %d rows, err %v", remote, len(rows), err)
				}
				if s.peak.Load() > tt.limit {
					t.Errorf("remote=%v: peak %d over cap %d", remote, s.peak.Load(), tt.limit)
				}
			}
		})
	}
}

func TestShuffleReaderCancel(t *testing.T) {
	checkGoroutines(t)
	producer, _ := newExecutorEnv(t, "e1")
	parts := writeStage(t, producer, "job", 1, 3000, 1)
	tc, _ := checkedTC(t, producer)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := NewShuffleReader(1, testSchema, parts).Execute(ctx, 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Release()
	cancel()
	var fe *FetchError
	for {
		b, err := s.Next(context.Background())
		if err == nil {
			b.Release()
			continue
		}
		if !errors.Is(err, context.Canceled) || errors.As(err, &fe) {
			t.Errorf("error %v, want plain cancellation", err)
		}
		break
	}
	s.Close()
	s.Close()
}

var _ physical.Stream = (*shuffleStream)(nil)
