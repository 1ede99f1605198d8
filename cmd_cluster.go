package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/engine"
	"sluice/exchange"
	"sluice/rpc"
)

// runScheduler is `sluice scheduler`: a standalone scheduler serving
// until SIGINT or SIGTERM.
func runScheduler(args []string) int {
	fs := pflag.NewFlagSet("sluice scheduler", pflag.ContinueOnError)
	fs.SortFlags = false
	bind := fs.String("bind", "127.0.0.1:50050", "gRPC listen address (host:port; port 0 picks a free one)")
	policy := fs.String("policy", cluster.PolicyPush, "task placement: push (the scheduler launches tasks) or pull (executors poll)")
	timeout := fs.Duration("executor-timeout", 10*time.Second, "how long an executor may miss heartbeats before it is considered lost")
	admissionWait := fs.Duration("admission-wait", cluster.DefaultAdmissionWait, "how long the oldest pipelined query waiting for vcores waits behind older queries before it goes ahead of them")
	flightBind := addFlightSQLFlag(fs, "")
	warehouseDir := fs.String("warehouse", "", "directory where CREATE TABLE without LOCATION keeps managed tables' files; every executor must read and write it (a shared file system). Without it such tables need SET catalog.warehouse")
	secFlags := addSecurityFlags(fs, true)
	allowed := addLocationsFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stdout, "Usage: sluice scheduler --bind ADDR --policy push|pull [--flight-sql-bind ADDR] [--warehouse DIR]\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "Error: unexpected argument %q (see sluice scheduler --help)\n", fs.Arg(0))
		return 2
	}
	sec, err := secFlags.load("")
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	var warehouse *engine.Warehouse
	locations := *allowed
	if *warehouseDir != "" {
		if err := os.MkdirAll(*warehouseDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "Error: --warehouse: %v\n", err)
			return 1
		}
		if warehouse, err = engine.NewWarehouse(*warehouseDir); err != nil {
			fmt.Fprintf(os.Stderr, "Error: --warehouse: %v\n", err)
			return 2
		}
		// The scheduler writes managed tables there and reads their
		// footers, whatever else it may read.
		locations = append(locations, *warehouseDir)
	}
	if err := restrictLocations(locations); err != nil {
		fmt.Fprintf(os.Stderr, "Error: --allowed-locations: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cat := catalog.New()
	sched, err := cluster.StartScheduler(cluster.SchedulerConfig{
		Bind: *bind, Policy: *policy, ExecutorTimeout: *timeout, AdmissionWait: *admissionWait, Logger: stderrLogger(), Security: sec, Catalog: cat,
		Warehouse: warehouse,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	defer sched.Close()
	if *flightBind != "" {
		srv, err := startFlightSQL(*flightBind, sched.Addr(), sec, sec, cat)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		defer srv.Close()
	}
	<-ctx.Done()
	return 0
}

// runExecutor is `sluice executor`: an executor serving a scheduler until
// SIGINT or SIGTERM, then shutting down gracefully.
func runExecutor(args []string) int {
	fs := pflag.NewFlagSet("sluice executor", pflag.ContinueOnError)
	fs.SortFlags = false
	sched := fs.String("scheduler", "127.0.0.1:50050", "the scheduler's gRPC address")
	bind := fs.String("bind", "127.0.0.1:0", "control service listen address (host:port)")
	flightBind := fs.String("flight-bind", "127.0.0.1:0", "Arrow Flight listen address (host:port)")
	advertise := fs.String("advertise-host", "", "host other processes use to reach this executor (default: the bind host, or 127.0.0.1)")
	vcores := fs.Int("vcores", 2, "partitions run at once")
	workDir := fs.String("work-dir", "", "directory for shuffle files (required)")
	id := fs.String("id", "", "executor ID (default: generated)")
	policy := fs.String("policy", "", "push (wait for tasks) or pull (poll for tasks); default: the scheduler's")
	heartbeat := fs.Duration("heartbeat", 2*time.Second, "heartbeat interval")
	maxAge := fs.Duration("job-data-max-age", time.Hour, "job data untouched this long is removed when the scheduler no longer knows its job")
	memLimit := fs.Int64("memory-limit", 0, "bytes all tasks may reserve together (0: three quarters of the machine's memory; -1: no limit)")
	held := fs.Int64("held-output-bytes", 0, "bytes of blocking stage outputs kept in memory instead of shuffle files, reserved from --memory-limit (0: an eighth of it, at most 256 MiB; -1: none, every output is a file)")
	compression := fs.String("exchange-compression", string(exchange.CompressLZ4), "codec of shuffle files and Flight streams: lz4, or none when every executor and client runs on this machine")
	secFlags := addSecurityFlags(fs, false)
	allowed := addLocationsFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stdout, "Usage: sluice executor --scheduler ADDR --bind ADDR --flight-bind ADDR --vcores N --work-dir DIR\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "Error: unexpected argument %q (see sluice executor --help)\n", fs.Arg(0))
		return 2
	}
	if *workDir == "" {
		fmt.Fprintln(os.Stderr, "Error: --work-dir DIR is required (shuffle files are written there)")
		return 2
	}
	codec, err := exchange.ParseCompression(*compression)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: --exchange-compression: %v\n", err)
		return 2
	}
	sec, err := secFlags.load("")
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	if err := restrictLocations(*allowed); err != nil {
		fmt.Fprintf(os.Stderr, "Error: --allowed-locations: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(*workDir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "Error: creating work dir: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	x, err := cluster.StartExecutor(ctx, cluster.ExecutorConfig{
		SchedulerAddr: *sched, BindAddr: *bind, FlightAddr: *flightBind, AdvertiseHost: *advertise,
		Vcores: *vcores, WorkDir: *workDir, Compression: codec, ID: *id, HeartbeatInterval: *heartbeat, Policy: *policy,
		MemoryLimit: *memLimit, HeldOutputBytes: *held, JobDataMaxAge: *maxAge, Logger: stderrLogger(), Security: sec,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	<-ctx.Done()
	x.Close()
	return 0
}

func flagExit(err error) int {
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(os.Stderr, "Error: %v\n", err)
	return 2
}

func stderrLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, nil))
}

// securityFlags are the token and TLS flags of every sluice process.
type securityFlags struct {
	tokenFile, adminTokenFile *string
	tls                       rpc.TLSFiles
}

// addSecurityFlags declares the flags on fs; admin adds --admin-token-file
// (the scheduler's and the shell's).
func addSecurityFlags(fs *pflag.FlagSet, admin bool) *securityFlags {
	f := &securityFlags{}
	f.tokenFile = fs.String("auth-token-file", "", "file holding the cluster's shared token: calls without it are refused, and it is sent on every call")
	if admin {
		f.adminTokenFile = fs.String("admin-token-file", "", "file holding the operator's token: .cluster shows every session's jobs in full to a caller presenting it")
	}
	fs.StringVar(&f.tls.Cert, "tls-cert", "", "PEM certificate this process serves (and presents to servers, for mutual TLS)")
	fs.StringVar(&f.tls.Key, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.tls.CA, "tls-ca", "", "PEM CA certificate(s) that peers' certificates must be signed by; a server given one requires client certificates (mutual TLS)")
	return f
}

// load reads the files the flags name. envToken (the shell's
// SLUICE_AUTH_TOKEN) is used when no token file is given. It returns nil
// when no flag asks for security.
func (f *securityFlags) load(envToken string) (*rpc.Security, error) {
	sec := &rpc.Security{Token: envToken}
	var err error
	if *f.tokenFile != "" {
		if sec.Token, err = rpc.ReadTokenFile(*f.tokenFile); err != nil {
			return nil, fmt.Errorf("--auth-token-file: %w", err)
		}
	}
	if f.adminTokenFile != nil && *f.adminTokenFile != "" {
		if sec.AdminToken, err = rpc.ReadTokenFile(*f.adminTokenFile); err != nil {
			return nil, fmt.Errorf("--admin-token-file: %w", err)
		}
	}
	if sec.ServerTLS, sec.ClientTLS, err = f.tls.Load(); err != nil {
		return nil, err
	}
	if sec.Token == "" && sec.AdminToken == "" && sec.ClientTLS == nil {
		return nil, nil
	}
	return sec, nil
}

// addLocationsFlag declares --allowed-locations on a server command.
func addLocationsFlag(fs *pflag.FlagSet) *[]string {
	return fs.StringSlice("allowed-locations", nil, "directories and s3://bucket/prefix URLs (comma-separated) whose files tables may be read from; none by default, so CREATE EXTERNAL TABLE fails until it is set")
}

// restrictLocations makes this server process read table files only under
// dirs (none when empty): a scheduler or executor must not open whatever
// file a client names.
func restrictLocations(dirs []string) error {
	l, err := catalog.NewLocations(dirs)
	if err != nil {
		return err
	}
	catalog.RestrictLocations(l)
	return nil
}
