package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestDealTasks(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		maxPer int
		offers []*Offer
		want   string // offer:partitions per task, in order
	}{
		{"narrow stage spread over hosts", 2, 4, []*Offer{{ExecutorID: "a", FlightAddress: "10.0.0.1:50051", Free: 2}, {ExecutorID: "b", FlightAddress: "10.0.0.2:50051", Free: 2}}, "[a:1 b:1]"},
		{"executors on one host packed", 2, 4, []*Offer{{ExecutorID: "a", FlightAddress: "127.0.0.1:1", Free: 2}, {ExecutorID: "b", FlightAddress: "127.0.0.1:2", Free: 2}}, "[a:2]"},
		{"a host's share over its executors", 6, 4, []*Offer{{ExecutorID: "a", FlightAddress: "h:1", Free: 2}, {ExecutorID: "b", FlightAddress: "h:2", Free: 2}, {ExecutorID: "c", FlightAddress: "g:1", Free: 8}}, "[a:2 b:1 c:3]"},
		{"full host's rest goes to the others", 8, 4, []*Offer{{ExecutorID: "a", Free: 3}, {ExecutorID: "b", Free: 8}}, "[a:3 b:4 b:1]"},
		{"max per task splits", 4, 1, []*Offer{{ExecutorID: "a", Free: 2}, {ExecutorID: "b", Free: 1}}, "[a:1 a:1 b:1]"},
		{"out of vcores", 8, 8, []*Offer{{ExecutorID: "a", Free: 5}}, "[a:5]"},
		{"nothing free", 3, 2, []*Offer{{ExecutorID: "a", Free: 0}}, "[]"},
		{"an overcommitted executor takes nothing from its host's room", 2, 2, []*Offer{{ExecutorID: "a", FlightAddress: "h:1", Free: -1}, {ExecutorID: "b", FlightAddress: "h:2", Free: 2}}, "[b:2]"},
		{"IPv6 hosts", 2, 2, []*Offer{{ExecutorID: "a", FlightAddress: "[::1]:1", Free: 2}, {ExecutorID: "b", FlightAddress: "[::1]:2", Free: 2}}, "[a:2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			free := make([]int, len(tc.offers))
			for i, o := range tc.offers {
				free[i] = o.Free
			}
			var got []string
			for _, d := range dealTasks(tc.n, tc.offers, free, tc.maxPer) {
				got = append(got, fmt.Sprintf("%s:%d", tc.offers[d.offer].ExecutorID, d.n))
			}
			if fmt.Sprint(got) != tc.want && !(len(got) == 0 && tc.want == "[]") {
				t.Errorf("dealt %v, want %s", got, tc.want)
			}
		})
	}
}

// TestDealTasksRandom checks dealTasks' promises on random clusters: no
// task over its executor's free vcores or maxPer, every partition dealt
// while vcores last, hosts with room to spare given shares that differ by
// at most one, and a host that ran out given at most one more than they.
func TestDealTasksRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for iter := 0; iter < 3000; iter++ {
		var offers []*Offer
		capacity := 0
		for i := range 1 + rng.IntN(6) {
			o := &Offer{ExecutorID: fmt.Sprint("e", i), FlightAddress: fmt.Sprintf("h%d:%d", rng.IntN(3), i), Free: rng.IntN(9)}
			capacity += o.Free
			offers = append(offers, o)
		}
		n, maxPer := rng.IntN(20), 1+rng.IntN(5)
		free := make([]int, len(offers))
		for i, o := range offers {
			free[i] = o.Free
		}
		used := make([]int, len(offers))
		total := 0
		for _, d := range dealTasks(n, offers, free, maxPer) {
			if d.n <= 0 || d.n > maxPer {
				t.Fatalf("task of %d partitions, max %d", d.n, maxPer)
			}
			used[d.offer] += d.n
			total += d.n
		}
		if total != min(n, capacity) {
			t.Fatalf("dealt %d of %d partitions with %d vcores free", total, n, capacity)
		}
		byHost, roomy := map[string]int{}, map[string]bool{}
		for i, o := range offers {
			if used[i] > o.Free || free[i] != o.Free-used[i] {
				t.Fatalf("offer %s: used %d of %d, %d left", o.ExecutorID, used[i], o.Free, free[i])
			}
			h := offerHost(o)
			byHost[h] += used[i]
			if free[i] > 0 {
				roomy[h] = true
			}
		}
		lo, hi := n, 0
		for h, k := range byHost {
			if roomy[h] {
				lo, hi = min(lo, k), max(hi, k)
			}
		}
		for h, k := range byHost {
			if !roomy[h] && k > hi+1 && len(roomy) > 0 {
				t.Fatalf("full host %s took %d, more than hosts with room (%d)", h, k, hi)
			}
		}
		if len(roomy) > 1 && hi-lo > 1 {
			t.Fatalf("hosts with room took %d to %d partitions: %v", lo, hi, byHost)
		}
	}
}
