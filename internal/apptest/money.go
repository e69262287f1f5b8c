package apptest

// SetQuota sets the user's balance to q through PUT /api/user/, as a delta
// from the balance read just before (quota_before): the only way that
// endpoint changes a balance.
func (g *Gateway) SetQuota(q int64) {
	g.Env.t.Helper()
	g.Root.OK("PUT", "/api/user/", map[string]any{"id": g.UserID, "quota": q, "quota_before": g.Quota(g.UserID)})
}
