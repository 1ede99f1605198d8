package exchange

import (
	"path/filepath"
	"strings"

	"google.golang.org/grpc/status"
)

// workDirMark stands for an executor's work directory in messages that
// leave the executor.
const workDirMark = "<executor work dir>"

// ScrubWorkDir replaces workDir (as configured and made absolute) in msg
// with a mark. Errors a client sees (a task's failure, a refused fetch)
// then do not tell every user of the cluster where an executor keeps its
// files; the executor's own log keeps the full paths.
func ScrubWorkDir(msg, workDir string) string {
	if workDir == "" {
		return msg
	}
	forms := []string{filepath.Clean(workDir)}
	if abs, err := filepath.Abs(workDir); err == nil && abs != forms[0] {
		forms = append(forms, abs)
	}
	if resolved, err := filepath.EvalSymlinks(workDir); err == nil {
		if abs, err := filepath.Abs(resolved); err == nil && abs != forms[0] {
			forms = append(forms, abs)
		}
	}
	// The longest form first, so that a relative form inside an absolute
	// one does not leave the absolute one's prefix behind.
	for i := range forms {
		for j := i + 1; j < len(forms); j++ {
			if len(forms[j]) > len(forms[i]) {
				forms[i], forms[j] = forms[j], forms[i]
			}
		}
	}
	for _, f := range forms {
		if f == "." || f == string(filepath.Separator) {
			continue
		}
		msg = strings.ReplaceAll(msg, f, workDirMark)
	}
	return msg
}

// scrubStatus is err with the work dir scrubbed from its message, keeping
// its gRPC code.
func scrubStatus(err error, workDir string) error {
	if err == nil || workDir == "" {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return status.Error(status.Code(err), ScrubWorkDir(err.Error(), workDir))
	}
	msg := ScrubWorkDir(st.Message(), workDir)
	if msg == st.Message() {
		return err
	}
	return status.Error(st.Code(), msg)
}
