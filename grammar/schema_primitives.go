package grammar

import "strings"

// space is the whitespace after a value, as llama.cpp's SPACE_RULE. Its
// body stays GBNF text: llama.cpp writes its newline "\n", where Lit
// writes "\x0a".
var (
	space     = ruleRef("space")
	spaceBody = Expr{s: `| " " | "\n" [ \t]{0,20}`, alt: true}
)

// A primitive is a shared rule of JSON values: its body and the
// primitives it references.
type primitive struct {
	body Expr
	deps string
}

// primitives are llama.cpp's PRIMITIVE_RULES (values end with space), in
// its layout.
var primitives = primitiveRules()

func primitiveRules() map[string]primitive {
	C, L, r := Class, Lit, ruleRef
	hex := C("0-9a-fA-F")
	// pair is a pair of an object: a key and a value.
	pair := Seq(r("string"), L(":"), space, r("value"))
	hour := alts(Seq(C("01"), C("0-9")), Seq(L("2"), C("0-3")))
	labels := Seq(r("email-label"), Repeat(paren(Seq(L("."), r("email-label"))), 0, 3))
	b64 := C("A-Za-z0-9+/")
	lits := func(ss ...string) Expr {
		out := make([]Expr, len(ss))
		for i, s := range ss {
			out[i] = L(s)
		}
		return alts(out...)
	}
	return map[string]primitive{
		"boolean":       {Seq(paren(lits("true", "false")), space), ""},
		"null":          {Seq(L("null"), space), ""},
		"decimal-part":  {Repeat(C("0-9"), 1, 16), ""},
		"integral-part": {alts(C("0"), Seq(C("1-9"), Repeat(C("0-9"), 0, 15))), ""},
		"number": {Seq(paren(Seq(Opt(L("-")), r("integral-part"))), Opt(paren(Seq(L("."), r("decimal-part")))),
			Opt(paren(Seq(C("eE"), Opt(C("-+")), r("integral-part")))), space), "integral-part decimal-part"},
		"integer": {Seq(paren(Seq(Opt(L("-")), r("integral-part"))), space), "integral-part"},
		"json-char": {alts(C(`^"\\\x7F\x00-\x1F`), Seq(C(`\\`), paren(alts(C(`"\\/bfnrt`), Seq(L("u"),
			paren(alts(Seq(C("0-9a-cA-Ce-fE-F"), rep(hex, 3, 3)), Seq(C("dD"), C("0-7"), rep(hex, 2, 2))))))))), ""},
		"string": {Seq(L(`"`), Star(r("json-char")), L(`"`), space), "json-char"},
		"value":  {alts(r("object"), r("array"), r("string"), r("number"), r("boolean"), r("null")), "object array string number boolean null"},
		"object": {Seq(L("{"), space, Opt(spaced(Seq(pair, Star(paren(Seq(L(","), space, pair)))))), L("}"), space), "string value"},
		"array": {Seq(L("["), space, Opt(spaced(Seq(r("value"), Star(paren(Seq(L(","), space, r("value"))))))), L("]"), space),
			"value"},
		"date": {alts(Seq(r("year"), L("-"), spaced(alts(Seq(r("month31"), L("-"), r("day31")), Seq(r("month30"), L("-"), r("day30")),
			Seq(L("02-"), r("day28"))))), Seq(r("leap-year"), L("-02-29"))), "year leap-year month31 month30 day31 day30 day28"},
		"year": {rep(C("0-9"), 4, 4), ""},
		"leap-year": {alts(Seq(rep(C("0-9"), 2, 2), spaced(alts(Seq(C("02468"), C("48")), Seq(C("13579"), C("26")), Seq(C("2468"), L("0"))))),
			Seq(spaced(alts(Seq(C("02468"), C("048")), Seq(C("13579"), C("26")))), L("00"))), ""},
		"month31": {lits("01", "03", "05", "07", "08", "10", "12"), ""},
		"month30": {lits("04", "06", "09", "11"), ""},
		"day31":   {alts(Seq(L("0"), C("1-9")), Seq(C("12"), C("0-9")), Seq(L("3"), C("01"))), ""},
		"day30":   {alts(Seq(L("0"), C("1-9")), Seq(C("12"), C("0-9")), L("30")), ""},
		"day28":   {alts(Seq(L("0"), C("1-9")), Seq(L("1"), C("0-9")), Seq(L("2"), C("0-8"))), ""},
		"time": {Seq(paren(hour), L(":"), C("0-5"), C("0-9"), L(":"), C("0-5"), C("0-9"), Opt(spaced(Seq(L("."), rep(C("0-9"), 3, 3)))),
			spaced(alts(L("Z"), Seq(spaced(lits("+", "-")), spaced(hour), L(":"), C("0-5"), C("0-9"))))), ""},
		"date-time": {Seq(r("date"), L("T"), r("time")), "date time"},
		"uuid": {Seq(L(`"`), rep(hex, 8, 8), L("-"), rep(hex, 4, 4), L("-"), rep(hex, 4, 4), L("-"), rep(hex, 4, 4), L("-"),
			rep(hex, 12, 12), L(`"`), space), ""},
		"email":       {Seq(r("email-atom"), Repeat(paren(Seq(L("."), r("email-atom"))), 0, 3), L("@"), labels), "email-atom email-label"},
		"email-atom":  {Repeat(C("a-zA-Z0-9_+-"), 1, 15), ""},
		"email-label": {Repeat(C("a-zA-Z0-9"), 1, 30), ""},
		"hostname":    {labels, "email-label"},
		"uri": {Seq(C("a-zA-Z"), Repeat(C("a-zA-Z0-9+.-"), 0, 15), L("://"), r("hostname"), Opt(paren(Seq(L(":"), C("1-9"), Repeat(C("0-9"), 0, 3)))),
			Repeat(paren(Seq(L("/"), Repeat(r("uri-char"), 0, 30))), 0, 8), Opt(paren(Seq(L("?"), Repeat(paren(alts(r("uri-char"), C("/?"))), 0, 60))))),
			"hostname uri-char"},
		"uri-char": {alts(C("a-zA-Z0-9._~!$&'()*+,;=:@-"), Seq(L("%"), rep(hex, 2, 2))), ""},
		"byte":     {Seq(Repeat(paren(rep(b64, 4, 4)), 0, 64), Opt(paren(alts(Seq(rep(b64, 2, 2), L("==")), Seq(rep(b64, 3, 3), L("=")))))), ""},
		"ipv4-octet": {alts(C("0-9"), Seq(C("1-9"), C("0-9")), Seq(L("1"), rep(C("0-9"), 2, 2)), Seq(L("2"), C("0-4"), C("0-9")),
			Seq(L("25"), C("0-5"))), ""},
		"ipv4": {Seq(r("ipv4-octet"), L("."), r("ipv4-octet"), L("."), r("ipv4-octet"), L("."), r("ipv4-octet")), "ipv4-octet"},
	}
}

// primitive writes the primitive rule name (and those it references), once,
// and returns a reference to it.
func (c *schemaConv) primitive(name string) Expr {
	p := primitives[name]
	if _, ok := c.b.rules[name]; !ok {
		c.addRule(name, p.body)
		for _, d := range strings.Fields(p.deps) {
			c.primitive(d)
		}
	}
	return ruleRef(name)
}
