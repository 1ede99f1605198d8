package scheduler

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"sluice/rpc"
)

// TestPipelinedCapabilities: each placed task is given the key of its own
// queues and the capabilities of exactly the queues it reads (per task,
// not in the stage plan all its stage's tasks share); each capability is
// the one the producer's key gives the partition; the client gets those
// of the final queues. Nothing else is handed out.
func TestPipelinedCapabilities(t *testing.T) {
	eng := testEngine(t)
	tests := []struct {
		name       string
		sql        string
		partitions int
		maxPerTask int
		offers     []*Offer
		// reads is, per task ("stage.task"), the queues it may read
		// ("stage/task/partition").
		reads map[string][]string
		final []string
	}{
		{
			name: "hash: a consumer task reads its partition in every producer", sql: groupBySQL, partitions: 3, maxPerTask: 1,
			offers: offers("a", 2, "b", 1),
			reads: map[string][]string{
				"2.0": {"1/0/0", "1/1/0", "1/2/0"},
				"2.1": {"1/0/1", "1/1/1", "1/2/1"},
				"2.2": {"1/0/2", "1/1/2", "1/2/2"},
			},
			final: []string{"2/0/0", "2/1/1", "2/2/2"},
		},
		{
			name: "a merging consumer reads every partition", sql: "select count(*) from orders", partitions: 3, maxPerTask: 2,
			offers: offers("a", 2, "b", 1),
			reads:  map[string][]string{"2.0": {"1/0/0", "1/0/1", "1/1/2"}},
			final:  []string{"2/0/0"},
		},
		{
			name:       "broadcast: every consumer task reads the whole build side",
			sql:        "select c_name, o_totalprice from customer join orders on c_custkey = o_custkey where c_mktsegment = 'BUILDING'",
			partitions: 3, maxPerTask: 2,
			offers: offers("a", 2, "b", 2),
			reads: map[string][]string{
				"2.0": {"1/0/0", "1/0/1", "1/1/2"},
				"2.1": {"1/0/0", "1/0/1", "1/1/2"},
			},
			final: []string{"2/0/0", "2/0/1", "2/1/2"},
		},
		{
			// Stage 2, the aggregate's final half, is shared: stages 3
			// and 7 both read it, their task i its partition i. Stages 4
			// and 6 are broadcast into stage 7, whose every task reads all
			// of them.
			name: "a shared stage gives each of its consumers its own partitions",
			sql: `select o_custkey, s from (select o_custkey, sum(o_totalprice) s from orders group by o_custkey) a
where s = (select max(s) from (select o_custkey, sum(o_totalprice) s from orders group by o_custkey) b)
  and o_custkey not in (select o_custkey from (select o_custkey, sum(o_totalprice) s from orders where o_orderkey > 5 group by o_custkey) c)`,
			partitions: 3, maxPerTask: 1,
			offers: offers("a", 2, "b", 1),
			reads: map[string][]string{
				"2.0": {"1/0/0", "1/1/0", "1/2/0"},
				"2.1": {"1/0/1", "1/1/1", "1/2/1"},
				"2.2": {"1/0/2", "1/1/2", "1/2/2"},
				"3.0": {"2/0/0"},
				"3.1": {"2/1/1"},
				"3.2": {"2/2/2"},
				"4.0": {"3/0/0", "3/1/1", "3/2/2"},
				"6.0": {"5/0/0", "5/1/0", "5/2/0"},
				"6.1": {"5/0/1", "5/1/1", "5/2/1"},
				"6.2": {"5/0/2", "5/1/2", "5/2/2"},
				"7.0": {"2/0/0", "4/0/0", "6/0/0", "6/1/1", "6/2/2"},
				"7.1": {"2/1/1", "4/0/0", "6/0/0", "6/1/1", "6/2/2"},
				"7.2": {"2/2/2", "4/0/0", "6/0/0", "6/1/1", "6/2/2"},
			},
			final: []string{"7/0/0", "7/1/1", "7/2/2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := pipelinedGraphFor(t, eng, tc.sql, tc.partitions, tc.maxPerTask, cluster(2, 8))
			if g.FinalCapabilities() != nil {
				t.Error("final capabilities before placement")
			}
			as := g.Offer(tc.offers)
			if len(as) == 0 {
				t.Fatal("nothing placed")
			}
			keys := map[string][]byte{}
			for _, a := range as {
				id := a.Task.Id
				k := fmt.Sprintf("%d.%d", id.StageId, id.TaskId)
				if len(a.Task.OutputKey) != 32 {
					t.Fatalf("task %s has output key %x", k, a.Task.OutputKey)
				}
				for other, ok := range keys {
					if bytes.Equal(ok, a.Task.OutputKey) {
						t.Errorf("tasks %s and %s share an output key", k, other)
					}
				}
				keys[k] = a.Task.OutputKey
			}
			// valid checks caps against the producers' keys and lists
			// them as stage/task/partition.
			valid := func(who string, caps []*rpc.PartitionCapability) []string {
				var out []string
				for _, c := range caps {
					name := fmt.Sprintf("%d/%d/%d", c.StageId, c.TaskId, c.Partition)
					key := keys[fmt.Sprintf("%d.%d", c.StageId, c.TaskId)]
					if !rpc.ValidCapability(key, c.Partition, c.Capability) {
						t.Errorf("%s: the capability of %s does not match its producer's key", who, name)
					}
					out = append(out, name)
				}
				slices.Sort(out)
				return out
			}
			for _, a := range as {
				id := a.Task.Id
				k := fmt.Sprintf("%d.%d", id.StageId, id.TaskId)
				if got := valid("task "+k, a.Task.ReadCapabilities); !slices.Equal(got, tc.reads[k]) {
					t.Errorf("task %s (partitions %v) holds %v, want %v", k, a.Task.Partitions, got, tc.reads[k])
				}
			}
			if got := valid("client", g.FinalCapabilities()); !slices.Equal(got, tc.final) {
				t.Errorf("client holds %v, want %v", got, tc.final)
			}
			g.Cancel()
			if g.FinalCapabilities() != nil {
				t.Error("final capabilities of a cancelled job")
			}
		})
	}
}
