import { describe, expect, it } from 'vitest';
import { html } from './html.js';

describe('html', () => {
  it.each<{ name: string; value: string; escaped: string }>([
    { name: 'a tag', value: '<script>x</script>', escaped: '&lt;script&gt;x&lt;/script&gt;' },
    {
      name: 'a double-quoted attribute break',
      value: '" onload="x',
      escaped: '&quot; onload=&quot;x',
    },
    {
      name: 'a single-quoted attribute break',
      value: "' onload='x",
      escaped: '&#39; onload=&#39;x',
    },
    { name: 'an entity', value: '&lt;', escaped: '&amp;lt;' },
    { name: 'a backtick', value: '`x`', escaped: '&#96;x&#96;' },
  ])('escapes $name in every value', ({ value, escaped }) => {
    expect(html`<p title="${value}">${value}</p>`.text).toBe(
      `<p title="${escaped}">${escaped}</p>`,
    );
  });

  it('inserts its own templates as markup and joins arrays', () => {
    expect(html`<ul>${['a', 'b'].map((item) => html`<li>${item}</li>`)}</ul>`.text).toBe(
      '<ul><li>a</li><li>b</li></ul>',
    );
  });
});
