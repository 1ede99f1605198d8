package cluster

// QueueEntries is the number of pipelined queues the executor's registry
// holds, over all jobs (tests check cleanup with it).
func (e *Executor) QueueEntries() int { return e.env.Registry.TotalEntries() }

// PeakQueuedBytes is the most bytes the executor's pipelined queues held at
// once since it started or ResetQueuedPeak (benchmarks report it).
func (e *Executor) PeakQueuedBytes() int64 { return e.env.Registry.PeakTotalBytes() }

// ResetQueuedPeak restarts PeakQueuedBytes.
func (e *Executor) ResetQueuedPeak() { e.env.Registry.ResetPeak() }

// PeakReservedBytes is the most bytes the executor's tasks had reserved
// from its memory pool at once (hash tables, sorts, buffers: what the
// memory limit counts) since it started or ResetReservedPeak.
func (e *Executor) PeakReservedBytes() int64 { return e.memory.Peak() }

// ResetReservedPeak restarts PeakReservedBytes.
func (e *Executor) ResetReservedPeak() { e.memory.ResetPeak() }
