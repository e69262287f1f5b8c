package api

import "net/http"

// Placeholder handlers: the resource's work is in progress.
func (s *Server) listLogs(w http.ResponseWriter, r *http.Request) error     { return errNotImplemented }
func (s *Server) listSelfLogs(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
func (s *Server) searchLogs(w http.ResponseWriter, r *http.Request) error   { return errNotImplemented }
func (s *Server) searchSelfLogs(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) logStat(w http.ResponseWriter, r *http.Request) error     { return errNotImplemented }
func (s *Server) selfLogStat(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
func (s *Server) deleteLogs(w http.ResponseWriter, r *http.Request) error  { return errNotImplemented }
func (s *Server) userDashboard(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
