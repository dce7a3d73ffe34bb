import { describe, expect, it } from 'vitest';
import { parseIssueQuery } from '../../schemas/api/errors.ts';

describe('the issue search (issue 40): key:value tag filters beside text', () => {
  it('splits tag terms from text words; quoted values hold spaces; a value may hold colons', () => {
    expect(parseIssueQuery('browser:Chrome release:abc123 checkout failed')).toEqual({
      ok: true,
      text: 'checkout failed',
      tags: [
        { key: 'browser', value: 'Chrome' },
        { key: 'release', value: 'abc123' },
      ],
    });
    expect(parseIssueQuery('browser:"Mobile Safari" url:https://a.example/x')).toEqual({
      ok: true,
      text: '',
      tags: [
        { key: 'browser', value: 'Mobile Safari' },
        { key: 'url', value: 'https://a.example/x' },
      ],
    });
    expect(parseIssueQuery('grp_0123')).toEqual({ ok: true, text: 'grp_0123', tags: [] });
    expect(parseIssueQuery('')).toEqual({ ok: true, text: '', tags: [] });
  });

  it('a query wholly in double quotes is text, colons included', () => {
    expect(parseIssueQuery('"TypeError: x is undefined"')).toEqual({ ok: true, text: 'TypeError: x is undefined', tags: [] });
  });

  it('refuses an empty value, more than 5 terms, a value over 200 characters', () => {
    expect(parseIssueQuery('TypeError: boom')).toMatchObject({ ok: false, message: expect.stringContaining('TypeError') });
    expect(parseIssueQuery('a:1 b:2 c:3 d:4 e:5 f:6')).toMatchObject({ ok: false });
    expect(parseIssueQuery('a:1 b:2 c:3 d:4 e:5')).toMatchObject({ ok: true });
    expect(parseIssueQuery(`url:${'x'.repeat(201)}`)).toMatchObject({ ok: false });
  });
});
