package witness

import (
	"errors"
	"io"
	"net/http"
)

// Handler serves the witness's two c2sp.org/tlog-witness routes, for a node to mount at the
// root of its HTTP address (submission and monitoring prefix are both the root):
//
//	POST /add-checkpoint              AddCheckpoint over HTTP
//	GET  /<hex SHA-256 of origin>/checkpoint   the latest cosigned checkpoint of a log
//
// A body over MaxBodyBytes is answered 413 without being read further; a request the witness
// cannot answer, 500.
func (w *Witness) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /add-checkpoint", w.serveAddCheckpoint)
	mux.HandleFunc("GET /{origin_hash}/checkpoint", w.serveCheckpoint)
	return mux
}

func (w *Witness) serveAddCheckpoint(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		w.metrics.requests.WithLabelValues(string(OutcomeTooLarge)).Inc()
		writeResult(rw, refuse(http.StatusRequestEntityTooLarge, OutcomeTooLarge, "body over the witness's bound"))
		return
	}
	if err != nil {
		// The client went away or sent a broken body; there is nobody to answer.
		w.logger.Debug("reading add-checkpoint body", "err", err)
		return
	}
	res, _ := w.AddCheckpoint(r.Context(), body) // an error is logged there and is res's 500
	writeResult(rw, res)
}

func writeResult(rw http.ResponseWriter, res Result) {
	rw.Header().Set("Content-Type", res.ContentType)
	rw.WriteHeader(res.Status)
	rw.Write(res.Body)
}

// serveCheckpoint is the monitoring route: the checkpoint as cosigned last, with the log's
// signatures and this witness's cosignature, or 404 for a log never cosigned.
func (w *Witness) serveCheckpoint(rw http.ResponseWriter, r *http.Request) {
	origin, ok := w.originOf(r.PathValue("origin_hash"))
	if ok {
		st, cosigned, err := w.Latest(origin)
		if err != nil {
			w.logger.Error("reading witness state", "origin", origin, "err", err)
			http.Error(rw, "internal error", http.StatusInternalServerError)
			return
		}
		if cosigned {
			rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			rw.Write(st.Checkpoint)
			return
		}
	}
	http.Error(rw, "no checkpoint cosigned for this log", http.StatusNotFound)
}
