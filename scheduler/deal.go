package scheduler

import "net"

// dealt is a run of a stage's partitions bound to one offer as one task.
type dealt struct {
	offer int // index into the offers
	n     int // partitions
}

// dealTasks splits up to n partitions into tasks over offers, whose free
// vcores (free, indexed like offers) it lowers, each task taking at most
// maxPer partitions; the tasks take the partitions in the order returned.
// The hosts with free vcores get even shares (one partition at a time to
// the host with the fewest so far), so a stage narrower than the cluster
// is spread over its machines instead of filling the first executor; a
// host's share is packed onto as few of its executors as it fits, since
// executors on one host share its CPUs and tasks in one process read each
// other's queues without Flight. Fewer than n are dealt only when the
// vcores run out.
func dealTasks(n int, offers []*Offer, free []int, maxPer int) []dealt {
	var hosts [][]int // offer indexes by host, hosts in order of first offer
	seen := map[string]int{}
	for i, o := range offers {
		h := offerHost(o)
		k, ok := seen[h]
		if !ok {
			k = len(hosts)
			seen[h] = k
			hosts = append(hosts, nil)
		}
		hosts[k] = append(hosts[k], i)
	}
	room := make([]int, len(hosts))
	for k, h := range hosts {
		room[k] = hostFree(h, free)
	}
	share := make([]int, len(hosts))
	for ; n > 0; n-- {
		best := -1
		for k := range hosts {
			if share[k] < room[k] && (best < 0 || share[k] < share[best]) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		share[best]++
	}
	var out []dealt
	for k, h := range hosts {
		for _, i := range h {
			for share[k] > 0 && free[i] > 0 {
				d := min(free[i], maxPer, share[k])
				out = append(out, dealt{offer: i, n: d})
				free[i] -= d
				share[k] -= d
			}
		}
	}
	return out
}

// hostFree is the free vcores of a host's offers (indexes into free).
func hostFree(offers []int, free []int) int {
	sum := 0
	for _, i := range offers {
		sum += max(free[i], 0)
	}
	return sum
}

// offerHost is the machine an offer's executor runs on: the host of its
// Flight address (its ID when it has none).
func offerHost(o *Offer) string {
	if o.FlightAddress == "" {
		return o.ExecutorID
	}
	host, _, err := net.SplitHostPort(o.FlightAddress)
	if err != nil {
		return o.FlightAddress
	}
	return host
}
