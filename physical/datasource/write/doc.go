// Package write owns what puts a query's result into files (COPY TO,
// CREATE TABLE AS, INSERT INTO an external table): the FileSink operator,
// which writes each partition's rows as Parquet or CSV under temporary
// names (local directories or an object store, split into hive-style
// folders by partition columns when asked); the WriteCommit operator,
// which gathers the sinks' listings into the task's commit list; and the
// commit protocol around them: CheckTarget before planning, CommitFiles
// once the job has succeeded (the one visible step), RemoveLeftovers for
// what failed or retried attempts left. Codec carries both operators to
// executors.
package write
