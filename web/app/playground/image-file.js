// An image file a user chose, decoded as the library's pipeline decodes it, or one error naming the file, what
// was expected and what came: its format by its first bytes (a damaged PNG is not "not an image"), else them.
import { bytes } from "../ui.js";
import { UserDataError } from "./user-data.js";

const EXPECTED = "a PNG, JPEG, WebP, GIF or BMP image";
// Leading bytes of the formats browsers and the server's pipeline both read (docs/reference/manifest.md, `image`).
const SIGNATURES = [
  ["PNG", [0x89, 0x50, 0x4e, 0x47]],
  ["JPEG", [0xff, 0xd8, 0xff]],
  ["GIF", [0x47, 0x49, 0x46, 0x38]],
  ["BMP", [0x42, 0x4d]],
  ["WebP", [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50]],
];

export function imageFormat(head) {
  const found = SIGNATURES.find(([, signature]) => signature.every((b, i) => b === null || head[i] === b));
  return found ? found[0] : null;
}

// What came, for the message: the format it starts as, else its first bytes as text or hex.
export function unreadableImageMessage(name, size, head) {
  if (!size) return `${name}: expected ${EXPECTED}, got an empty file`;
  const format = imageFormat(head);
  if (format)
    return `${name}: a ${format} file (${bytes(size)}) that does not decode: damaged or cut short; expected ${EXPECTED}`;
  const printable = head.every((b) => b === 0x09 || b === 0x0a || b === 0x0d || (b >= 0x20 && b < 0x7f));
  const shown = printable
    ? JSON.stringify(String.fromCharCode(...head).trim())
    : Array.from(head, (b) => b.toString(16).padStart(2, "0")).join(" ");
  return `${name}: expected ${EXPECTED}, got ${bytes(size)} starting ${shown}`;
}

export async function decodedImage(file) {
  try {
    return await createImageBitmap(file, { imageOrientation: "from-image" });
  } catch {
    const head = new Uint8Array(await file.slice(0, 12).arrayBuffer());
    throw new UserDataError(unreadableImageMessage(file.name, file.size, head));
  }
}
