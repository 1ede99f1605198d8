package exchange

import "fmt"

// FetchError reports that a shuffle reader could not obtain one producer's
// output: the executor holding it is gone, lost the file, or the stream
// broke. The executor reports it as a fetch failure so the scheduler can
// re-run the producer task (the map partition) whose output was lost,
// rather than retrying the consumer against data that no longer exists.
// Find it with errors.As.
type FetchError struct {
	// ExecutorID is the executor that held the output.
	ExecutorID string
	// StageID is the producer stage.
	StageID int
	// MapPartition is the producer's input partition that wrote the file.
	MapPartition int
	// Partition is the output partition being read.
	Partition int
	// Err is the underlying failure.
	Err error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("fetching partition %d of stage %d (map partition %d) from executor %s: %v",
		e.Partition, e.StageID, e.MapPartition, e.ExecutorID, e.Err)
}

// Unwrap returns the underlying failure.
func (e *FetchError) Unwrap() error { return e.Err }
