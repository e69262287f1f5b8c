package api

import "net/http"

// Placeholder handlers: the resource's work is in progress.
func (s *Server) listRedemptions(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) searchRedemptions(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) getRedemption(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) createRedemptions(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) updateRedemption(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) deleteRedemption(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) redeemCode(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
