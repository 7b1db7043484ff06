// A small Markdown renderer for the chat: fenced code blocks, inline code,
// headings, lists, block quotes, rules, bold, italics and http(s) links.
// Every piece of the source is HTML-escaped before any tag is added, so the
// model's output can never inject markup. An unclosed fence (a reply still
// streaming) renders as a code block so far.
'use strict';

function escapeHTML(s) {
  return s.replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// inlineMarkdown renders one line's inline markup.
function inlineMarkdown(text) {
  const codes = [];
  text = text.replace(/\u0000/g, '');
  // Code spans first, kept out of the other rules behind placeholders.
  let s = text.replace(/`([^`\n]+)`/g, (_, c) => { codes.push(c); return '\u0000' + (codes.length - 1) + '\u0000'; });
  s = escapeHTML(s);
  s = s.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_, label, url) => '<a href="' + url + '" rel="noopener noreferrer" target="_blank">' + label + '</a>');
  s = s.replace(/\*\*([^*\n]+)\*\*/g, '<strong>$1</strong>');
  s = s.replace(/(^|[^*\w])\*([^*\n]+)\*(?![*\w])/g, '$1<em>$2</em>');
  s = s.replace(/(^|[^_\w])_([^_\n]+)_(?![_\w])/g, '$1<em>$2</em>');
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => '<code>' + escapeHTML(codes[+i]) + '</code>');
}

// renderMarkdown returns the HTML of src.
function renderMarkdown(src) {
  const lines = src.replace(/\r\n?/g, '\n').split('\n');
  const out = [];
  let para = [];
  let list = null; // 'ul' or 'ol' while in a list
  const flushPara = () => {
    if (para.length) out.push('<p>' + para.map(inlineMarkdown).join('<br>') + '</p>');
    para = [];
  };
  const closeList = () => {
    if (list) out.push('</' + list + '>');
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/);
    if (fence) {
      flushPara();
      closeList();
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      const lang = fence[2] ? ' class="language-' + escapeHTML(fence[2]) + '"' : '';
      out.push('<pre><code' + lang + '>' + escapeHTML(code.join('\n')) + '</code></pre>');
      continue;
    }
    let m;
    if (/^\s*$/.test(line)) {
      flushPara();
      closeList();
    } else if ((m = line.match(/^(#{1,6})\s+(.*)$/))) {
      flushPara();
      closeList();
      out.push('<h' + m[1].length + '>' + inlineMarkdown(m[2]) + '</h' + m[1].length + '>');
    } else if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushPara();
      closeList();
      out.push('<hr>');
    } else if ((m = line.match(/^\s*(?:([-*+])|\d+[.)])\s+(.*)$/))) {
      flushPara();
      const kind = m[1] ? 'ul' : 'ol';
      if (list !== kind) {
        closeList();
        out.push('<' + kind + '>');
        list = kind;
      }
      out.push('<li>' + inlineMarkdown(m[2]) + '</li>');
    } else if ((m = line.match(/^\s*>\s?(.*)$/))) {
      flushPara();
      closeList();
      out.push('<blockquote>' + inlineMarkdown(m[1]) + '</blockquote>');
    } else {
      closeList();
      para.push(line);
    }
  }
  flushPara();
  closeList();
  return out.join('');
}
