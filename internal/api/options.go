package api

import "net/http"

// Placeholder handlers: the resource's work is in progress.
func (s *Server) listOptions(w http.ResponseWriter, r *http.Request) error  { return errNotImplemented }
func (s *Server) updateOption(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
