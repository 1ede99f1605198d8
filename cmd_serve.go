package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"

	"sluice/catalog"
	"sluice/cluster"
	"sluice/engine"
	"sluice/flightsql"
	"sluice/rpc"
	"sluice/session"
)

// addFlightSQLFlag declares --flight-sql-bind.
func addFlightSQLFlag(fs *pflag.FlagSet, def string) *string {
	return fs.String("flight-sql-bind", def, "serve Arrow Flight SQL (JDBC, ADBC, ODBC drivers) on this address (host:port); the token and TLS flags protect it as they do the cluster's ports")
}

// startFlightSQL serves Flight SQL for the scheduler at schedAddr, whose
// catalog is cat. clusterSec is what the endpoint's sessions present to
// the cluster; sec protects the endpoint itself.
func startFlightSQL(bind, schedAddr string, clusterSec, sec *rpc.Security, cat *catalog.Catalog) (*flightsql.Server, error) {
	// Sessions reach the scheduler in this process over loopback; a
	// scheduler bound to every interface is dialled on 127.0.0.1.
	if host, port, err := net.SplitHostPort(schedAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			schedAddr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	// The endpoint's clients are not the operator: their sessions do not
	// present the operator's token.
	var client *rpc.Security
	if clusterSec != nil {
		c := *clusterSec
		c.AdminToken = ""
		client = &c
	}
	return flightsql.Start(flightsql.Config{
		Bind: bind, SchedulerAddr: schedAddr, SchedulerSecurity: client, Security: sec,
		Catalog: cat, Version: version, Logger: stderrLogger(),
	})
}

// runServe is `sluice serve`: an embedded cluster without a shell, serving
// Flight SQL (and the scheduler's own gRPC port for sluice shells) until
// SIGINT or SIGTERM.
func runServe(args []string) int {
	fs := pflag.NewFlagSet("sluice serve", pflag.ContinueOnError)
	fs.SortFlags = false
	flightBind := addFlightSQLFlag(fs, "127.0.0.1:32010")
	executors := fs.Int("executors", 2, "executors in the embedded cluster")
	tpchSF := fs.Int("tpch", 0, "register the TPC-H tables at this scale factor (generated once, cached)")
	secFlags := addSecurityFlags(fs, false)
	allowed := addLocationsFlag(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stdout, `Usage: sluice serve [flags] [FILE...]   an embedded cluster serving Arrow Flight SQL, without a shell

Each FILE (.parquet or .csv) is registered as a table named after it. Table
files are read only under --allowed-locations, the TPC-H cache (--tpch) and
the directories of the FILEs named here.

Flags:
%s`, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	files, bad := dataFileArgs(fs.Args())
	if bad != "" {
		fmt.Fprintf(os.Stderr, "Error: unexpected argument %q (data files end in .parquet or .csv; see sluice serve --help)\n", bad)
		return 2
	}
	if *flightBind == "" {
		fmt.Fprintln(os.Stderr, "Error: --flight-sql-bind ADDR is required")
		return 2
	}
	if *executors <= 0 {
		fmt.Fprintln(os.Stderr, "Error: --executors must be at least 1")
		return 2
	}
	sec, err := secFlags.load("")
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 2
	}
	dirs := append([]string{}, *allowed...)
	var tpchPath string
	if *tpchSF > 0 {
		if tpchPath, err = tpchDir(*tpchSF); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		if err := os.MkdirAll(tpchPath, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		dirs = append(dirs, tpchPath)
	}
	for _, f := range files {
		dir := filepath.Dir(f.path)
		for catalog.IsGlob(dir) {
			dir = filepath.Dir(dir)
		}
		if st, err := os.Stat(f.path); err == nil && st.IsDir() {
			dir = f.path
		}
		dirs = append(dirs, dir)
	}
	// Managed tables live in a temporary warehouse made now, so that the
	// restriction below can allow it, and removed when serve exits.
	warehouse := engine.TempWarehouse()
	defer warehouse.Close()
	whDir, err := warehouse.Dir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	dirs = append(dirs, whDir)
	if err := restrictLocations(dirs); err != nil {
		fmt.Fprintf(os.Stderr, "Error: --allowed-locations: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cat := catalog.New()
	emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Executors: *executors, Catalog: cat, Logger: stderrLogger(), Warehouse: warehouse})
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	defer emb.Close()
	if *tpchSF > 0 || len(files) > 0 {
		sess, err := session.ConnectInProcess(emb)
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
		if *tpchSF > 0 {
			err = registerTPCH(ctx, sess, *tpchSF)
		}
		if err == nil {
			err = registerFileArgs(ctx, sess, files, func(s string) { fmt.Fprintln(os.Stderr, s) })
		}
		sess.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
			return 1
		}
	}
	srv, err := startFlightSQL(*flightBind, emb.SchedulerAddr(), emb.Security(), sec, cat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		return 1
	}
	<-ctx.Done()
	srv.Close()
	return 0
}
