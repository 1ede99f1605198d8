package cluster

// QueueEntries is the number of pipelined queues the executor's registry
// holds, over all jobs (tests check cleanup with it).
func (e *Executor) QueueEntries() int { return e.env.Registry.TotalEntries() }

// PeakQueuedBytes is the most bytes the executor's pipelined queues held at
// once since it started or ResetQueuedPeak (benchmarks report it).
func (e *Executor) PeakQueuedBytes() int64 { return e.env.Registry.PeakTotalBytes() }

// ResetQueuedPeak restarts PeakQueuedBytes.
func (e *Executor) ResetQueuedPeak() { e.env.Registry.ResetPeak() }

// PipelinedReads counts the pipelined queues read from this executor:
// local, by consumer tasks on this executor straight from the registry,
// and remote, streamed over Flight to other executors and clients.
func (e *Executor) PipelinedReads() (local, remote int64) {
	remote = e.flightSvc.PipelinedServed()
	return e.env.Registry.Taken() - remote, remote
}

// PeakReservedBytes is the most bytes the executor's tasks had reserved
// from its memory pool at once (hash tables, sorts, buffers: what the
// memory limit counts) since it started or ResetReservedPeak.
func (e *Executor) PeakReservedBytes() int64 { return e.memory.Peak() }

// ResetReservedPeak restarts PeakReservedBytes.
func (e *Executor) ResetReservedPeak() { e.memory.ResetPeak() }
