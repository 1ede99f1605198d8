// Package adbc holds no code of its own: its test is a client of `sluice
// serve` written as a Go program with only database/sql and the ADBC Flight
// SQL driver would be. It is a module of its own so that the driver and
// what it needs (OpenTelemetry, more gRPC) stay out of sluice's module.
package adbc
