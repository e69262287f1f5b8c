package msgtext

import "slices"

// specFixed are the messages the management API spec gives character for
// character (docs/api.md, the spec's messages: its Authentication failure
// table and its Errors table). They are answered as written whatever the
// language, so a client that matches on them keeps working. Formats stand
// for the spec's placeholders (<subnet>, <ip>, <model>).
var specFixed = []string{
	// Authentication failure responses.
	"无权进行此操作,未登录且未提供 access token",
	"无权进行此操作,access token 无效",
	"无权进行此操作,权限不足",
	"用户已被封禁",
	"该令牌只能在指定网段使用:%s,当前 ip:%s",
	"该令牌无权使用模型:%s",
	"普通用户不支持指定渠道",

	// Errors.
	"模型名称不能为空",
	"ID不能为空",
	"无效的ID",
	"分组名称不能为空",
	"未登录",
	"无效的参数",
	"amount 或 preset_amount 至少传一个",
	"pay_method 不能为空",
	"不支持的支付方式",
	"自助充值仅支持 wechat / the service / bank",
	"系统尚未开通任何支付通道,请设置后开启支付",
	"充值功能未开启",
	"快捷金额未配置",
	"未开启自定义金额",
	"充值金额必须大于 0",
	"生成订单号失败,请重试",
	"第 %d 项金额必须大于 0",
	"第 %d 项额度不能为负数",
	"快捷金额重复:%s 元已存在",
	"兑换比例必须大于 0",
}

// Fixed reports whether msg is one of the spec's messages or formats: it is
// never translated.
func Fixed(msg string) bool {
	if slices.Contains(specFixed, msg) {
		return true
	}
	for _, p := range compiled() {
		if !p.fixed {
			break // spec formats come first
		}
		if p.re.MatchString(msg) {
			return true
		}
	}
	return false
}
