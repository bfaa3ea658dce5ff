/**
 * The text of a thrown value, for messages shown to the user: an Error's message (its name when
 * the message is empty), a string as it is, anything else through String(); never empty.
 */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message || e.name || 'unknown error';
  if (typeof e === 'string') return e || 'unknown error';
  if (e === undefined || e === null) return 'unknown error';
  try {
    return String(e) || 'unknown error';
  } catch {
    return Object.prototype.toString.call(e);
  }
}
