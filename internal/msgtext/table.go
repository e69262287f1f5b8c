package msgtext

// label marks argument indexes (from 0) that are labels: a field name or a
// nested message, rendered in the language with the message.
func label(i ...int) []int { return i }

// english is the English of every Chinese message and format of the code
// that the spec does not fix, keyed by the Chinese text exactly as written
// in the code. A key with verbs is a format: its English keeps the same
// verbs in the same order (TestTable). TestEveryMessageTranslated fails for
// a Chinese string literal of internal/ or cmd/modelgate missing here (and
// not in specFixed), so a new message cannot ship untranslated.
//
// The texts are short and plain, like OpenAI's errors.
var english = map[string]entry{
	// Field labels (textfield.Field.Label) and the label formats they are
	// shown in.
	"用户名":   {text: "username"},
	"显示名称":  {text: "display name"},
	"邮箱":    {text: "email"},
	"分组名称":  {text: "group name"},
	"渠道名称":  {text: "channel name"},
	"模型名称":  {text: "model name"},
	"模型列表":  {text: "model list"},
	"模型映射":  {text: "model mapping"},
	"密钥":    {text: "key"},
	"令牌名称":  {text: "token name"},
	"兑换码名称": {text: "redemption code name"},
	"兑换码":   {text: "redemption code"},
	"备注":    {text: "remark"},
	"配置值":   {text: "option value"},
	"参数 ":   {text: "parameter "},
	"参数 %s": {text: "parameter %s"},
	"%s 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符": {text: "%s contains invalid characters: it must be UTF-8 text without NUL or control characters", labels: label(0)},
	"%s 不能超过 %d 个字符":                      {text: "%s must be at most %d characters", labels: label(0)},
	"%s 不能超过 %d 字节":                       {text: "%s must be at most %d bytes", labels: label(0)},

	// The /api wire layer (httpx).
	"请求体过大,上限 1 MiB":                           {text: "request body too large; the limit is 1 MiB"},
	"接口不存在":                                    {text: "no such endpoint"},
	"服务器内部错误,请稍后再试":                            {text: "internal server error; try again later"},
	"参数 %s 必须是整数":                              {text: "parameter %s must be an integer"},
	"拒绝跨站请求":                                   {text: "cross-site request refused"},
	"数据库不可用":                                   {text: "database unavailable"},
	"Idempotency-Key 必须是 1 到 128 个可见 ASCII 字符": {text: "Idempotency-Key must be 1 to 128 visible ASCII characters"},
	"该 Idempotency-Key 已用于另一个请求,请为新请求使用新的 Idempotency-Key": {text: "this Idempotency-Key was used for another request; use a new Idempotency-Key for a new request"},

	// Users and login.
	"用户名长度必须在 3 到 20 个字符之间":                              {text: "username must be 3 to 20 characters"},
	"用户名不能包含空格":                                          {text: "username must not contain spaces"},
	"显示名称不能超过 20 个字符":                                    {text: "display name must be at most 20 characters"},
	"邮箱格式不正确":                                            {text: "invalid email address"},
	"分组名称长度必须在 1 到 32 个字符之间":                             {text: "group name must be 1 to 32 characters"},
	"无效的角色":                                              {text: "invalid role"},
	"无效的用户状态":                                            {text: "invalid user status"},
	"登录失败次数过多,请稍后再试":                                     {text: "too many failed logins; try again later"},
	"密码长度必须在 8 到 64 个字符之间":                               {text: "password must be 8 to 64 characters"},
	"管理员关闭了新用户注册":                                        {text: "registration is closed by the administrator"},
	"用户名已存在":                                             {text: "username already taken"},
	"用户名或密码错误,或用户已被封禁":                                   {text: "wrong username or password, or the user is banned"},
	"用户不存在":                                              {text: "user not found"},
	"不能删除超级管理员账户":                                        {text: "the root account cannot be deleted"},
	"已退出登录":                                              {text: "logged out"},
	"用户名和密码不能为空":                                         {text: "username and password must not be empty"},
	"无权管理同级或更高权限的用户":                                     {text: "you cannot manage a user whose role is equal to or above yours"},
	"无法授予同级或更高的权限":                                       {text: "you cannot grant a role equal to or above yours"},
	"不支持的操作,可选 disable, enable, delete, promote, demote": {text: "unsupported action; use disable, enable, delete, promote or demote"},
	"额度必须是非零整数":                                          {text: "quota must be a non-zero integer"},
	"扣减额度超过用户当前余额":                                       {text: "the deduction exceeds the user's balance"},
	"单次充值或扣减的额度不能超过 1000000000000000":                    {text: "one top-up or deduction must be at most 1000000000000000"},
	"充值后余额将超过上限 1000000000000000":                        {text: "the balance would exceed its limit of 1000000000000000"},
	"额度必须在 0 到 1000000000000000 之间":                      {text: "quota must be between 0 and 1000000000000000"},
	"用户余额在读取后已变化,请刷新后重试,或使用 POST /api/topup 调整余额": {text: "the user's balance changed since it was read; reload and retry, or adjust it with POST /api/topup"},

	// Channels.
	"不支持的渠道类型,可选 1 (OpenAI 兼容)、14 (Anthropic)、24 (Gemini)": {text: "unsupported channel type; use 1 (OpenAI-compatible), 14 (Anthropic) or 24 (Gemini)"},
	"渠道名称长度必须在 1 到 128 个字符之间":                              {text: "channel name must be 1 to 128 characters"},
	"Base URL 必须是 http 或 https 地址,且不能带查询参数":                {text: "base URL must be an http or https URL without a query"},
	"模型列表不能为空":                            {text: "model list must not be empty"},
	"模型名称不能超过 191 个字符":                    {text: "model name must be at most 191 characters"},
	"分组列表不能超过 512 个字符":                    {text: "group list must be at most 512 characters"},
	"模型映射必须是 JSON 对象,键和值都是非空字符串":          {text: "model mapping must be a JSON object of non-empty strings"},
	"权重不能为负数":                             {text: "weight must not be negative"},
	"无效的渠道状态,可选 1 (启用)、2 (手动禁用)、3 (自动禁用)": {text: "invalid channel status; use 1 (enabled), 2 (disabled manually) or 3 (disabled automatically)"},
	"渠道不存在":                               {text: "channel not found"},
	"渠道测试失败: ":                            {text: "channel test failed: "},
	"渠道测试失败: %s":                          {text: "channel test failed: %s", labels: label(0)},
	"上游返回 %d: %s":                         {text: "upstream answered %d: %s"},

	// Tokens.
	"令牌名称长度必须在 1 到 50 个字符之间":              {text: "token name must be 1 to 50 characters"},
	"过期时间不能早于当前时间":                        {text: "expiry time must not be in the past"},
	"剩余额度不能为负数":                           {text: "remaining quota must not be negative"},
	"剩余额度不能超过 1000000000000000":           {text: "remaining quota must be at most 1000000000000000"},
	"无效的网段:%s":                            {text: "invalid subnet: %s"},
	"网段列表过长,上限 1024 个字符":                  {text: "subnet list too long; the limit is 1024 characters"},
	"无效的令牌状态,只能设置为 1 (启用) 或 2 (禁用)":       {text: "invalid token status; use 1 (enabled) or 2 (disabled)"},
	"令牌已过期,无法启用,请先修改令牌过期时间,或者设置为永不过期":     {text: "the token has expired and cannot be enabled; change its expiry time first, or make it never expire"},
	"令牌可用额度已用尽,无法启用,请先修改令牌剩余额度,或者设置为无限额度": {text: "the token's quota is used up and it cannot be enabled; raise its remaining quota first, or make it unlimited"},
	"令牌不存在": {text: "token not found"},

	// Redemption codes.
	"兑换码名称长度必须在 1 到 20 个字符之间":    {text: "redemption code name must be 1 to 20 characters"},
	"兑换码额度必须大于 0":                {text: "redemption code quota must be greater than 0"},
	"兑换码额度不能超过 1000000000000000": {text: "redemption code quota must be at most 1000000000000000"},
	"兑换码数量必须在 1 到 100 之间":        {text: "redemption code count must be between 1 and 100"},
	"兑换码状态只能设置为 1(启用)或 2(禁用)":    {text: "redemption code status can only be set to 1 (enabled) or 2 (disabled)"},
	"兑换码不存在":                     {text: "redemption code not found"},
	"该兑换码已被使用,不能修改状态":            {text: "this redemption code has been used; its status cannot change"},
	"该兑换码已被使用,不能修改额度":            {text: "this redemption code has been used; its quota cannot change"},
	"兑换码不能为空":                    {text: "redemption code must not be empty"},
	"无效的兑换码":                     {text: "invalid redemption code"},
	"该兑换码已被禁用":                   {text: "this redemption code is disabled"},
	"该兑换码已被使用":                   {text: "this redemption code has been used"},

	// Prices.
	"分组名称不能超过 32 个字符":             {text: "group name must be at most 32 characters"},
	"价格必须是 0 到 1000000 之间的有限数":    {text: "price must be a finite number from 0 to 1000000"},
	"计费类型只能是 token 或 per_request": {text: "billing type must be token or per_request"},
	"折扣必须大于 0 且不超过 10":            {text: "discount must be greater than 0 and at most 10"},
	"模型价格不存在":                     {text: "model price not found"},
	"分组价格不存在":                     {text: "group price not found"},

	// Logs and billing dead letters.
	"日志类型无效,可选 0(全部), 1(充值), 2(消费), 3(管理), 4(系统), 5(错误)": {text: "invalid log type; use 0 (all), 1 (top-up), 2 (consume), 3 (admin), 4 (system) or 5 (error)"},
	"target_timestamp 必须是大于 0 的 Unix 时间戳(秒)":             {text: "target_timestamp must be a Unix time in seconds greater than 0"},
	"该结算记录不存在":   {text: "settlement record not found"},
	"重放结算失败: ":   {text: "settlement replay failed: "},
	"重放结算失败: %s": {text: "settlement replay failed: %s", labels: label(0)},

	// Runtime options (option.Set).
	"未知的配置项: %s":            {text: "unknown option: %s"},
	"配置项 %s 的值无效: %v":       {text: "invalid value for option %s: %v", labels: label(1)},
	"不能超过 64 字节":            {text: "must be at most 64 bytes"},
	"必须是 true 或 false":      {text: "must be true or false"},
	"必须是不小于 0 的整数":          {text: "must be an integer not less than 0"},
	"不能超过 1000000000000000": {text: "must be at most 1000000000000000"},
	"必须是 %d 到 %d 之间的整数":     {text: "must be an integer from %d to %d"},
	"必须是 zh 或 en":           {text: "must be zh or en"},

	// The /v1 relay: key authentication (the 401s name the precise reason;
	// the spec fixes the 403s), quotas, routing, the request body, upstreams.
	"未提供令牌":              {text: "no API key provided"},
	"无效的令牌":              {text: "invalid API key"},
	"该令牌已被禁用":            {text: "this API key is disabled"},
	"该令牌已过期":             {text: "this API key has expired"},
	"该令牌额度已用尽":           {text: "this API key's quota is used up"},
	"用户额度不足":             {text: "insufficient user quota"},
	"令牌额度不足":             {text: "insufficient API key quota"},
	"模型 %s 未设置价格,暂不可用":   {text: "model %s has no price and is not available"},
	"分组 %s 下模型 %s 无可用渠道": {text: "group %s has no available channel for model %s"},
	"指定的渠道 %d 不存在、未启用或不支持该模型": {text: "channel %d does not exist, is not enabled or does not serve this model"},
	"请求体过大":                              {text: "request body too large"},
	"请求体不是有效的 JSON":                      {text: "request body is not valid JSON"},
	"缺少 model 参数":                        {text: "missing model parameter"},
	"上游服务请求失败":                           {text: "upstream request failed"},
	"上游服务返回了无法解析的响应":                     {text: "the upstream answered a response that cannot be parsed"},
	"%s: 上游限流 (429)":                     {text: "%s: upstream rate limited (429)", labels: label(0)},
	"%s: 无法连接上游":                         {text: "%s: cannot reach the upstream", labels: label(0)},
	"%s: 上游返回 %d":                        {text: "%s: upstream answered %d", labels: label(0)},
	"服务器繁忙,请稍后再试":                        {text: "server busy; try again later"},
	"读取请求体超时":                            {text: "timed out reading the request body"},
	"需要 multipart/form-data 请求体":         {text: "a multipart/form-data request body is required"},
	"multipart 请求体无效":                    {text: "invalid multipart request body"},
	"分组 %s 下模型 %s 的渠道不支持接口 %s":           {text: "group %s has no channel for model %s that supports endpoint %s"},
	"指定的渠道 %d 不支持接口 %s":                  {text: "channel %d does not support endpoint %s"},
	"请求方法 %s 不适用于 %s,允许: %s":             {text: "method %s is not allowed on %s; allowed: %s"},
	"参数 status 必须是 0 到 999 之间的 HTTP 状态码": {text: "parameter status must be an HTTP status code from 0 to 999"},
	"缺少 messages 参数":                     {text: "missing messages parameter"},
}
