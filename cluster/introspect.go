package cluster

// QueueEntries is the number of pipelined queues the executor's registry
// holds, over all jobs (tests check cleanup with it).
func (e *Executor) QueueEntries() int { return e.env.Registry.TotalEntries() }
