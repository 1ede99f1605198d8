package physical

import "sync"

// CommitFile is one file a write commits: written under Temp, renamed to
// Final.
type CommitFile struct{ Temp, Final string }

// CommitList collects the files a write's WriteCommit (package
// datasource/write) decided on, for whoever runs the write to commit once
// the job has succeeded. Safe for concurrent use.
type CommitList struct {
	mu    sync.Mutex
	files []CommitFile
}

// Set replaces the list (a task reports one listing).
func (l *CommitList) Set(files []CommitFile) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files = files
}

// Files returns the list.
func (l *CommitList) Files() []CommitFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files
}
