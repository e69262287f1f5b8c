package api

import "net/http"

// Placeholder handlers: the resource's work is in progress.
func (s *Server) listModelPrices(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) createModelPrice(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) updateModelPrice(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) deleteModelPrice(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) listGroupPrices(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) createGroupPrice(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) updateGroupPrice(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) deleteGroupPrice(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
